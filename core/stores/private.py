"""Data files and directories readable by their owner alone.

The embedded store's append-only files hold every event's row, its log names
what ran, the auth database holds live session keys: nobody else on the host
may read them. New directories are made 0700 and new files 0600; files that an
older version left with wider modes are narrowed on start. What the process
does not own (a directory given by an administrator, shared on purpose) is
left as it is.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: str | os.PathLike[str], *, narrow_existing: bool = True) -> Path:
    """Create ``path`` (and missing parents) owner-only, or narrow it (unless
    ``narrow_existing`` is false)."""
    path = Path(path)
    missing = []
    here = path
    while not here.exists() and here != here.parent:
        missing.append(here)
        here = here.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
    if narrow_existing or missing:
        narrow(path)
    return path


def private_file(path: str | os.PathLike[str]) -> Path:
    """Create an empty ``path`` owner-only unless it exists, then narrow it."""
    path = Path(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    os.close(fd)
    narrow(path)
    return path


def narrow(path: str | os.PathLike[str], *, recursive: bool = False) -> None:
    """Take group and other bits off ``path`` (a directory and, with
    ``recursive``, what is under it) where this process owns it. Sockets,
    what is missing and shared directories with the sticky bit (``/tmp``) are
    left alone."""
    path = Path(path)
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or stat.S_ISSOCK(info.st_mode) or info.st_mode & stat.S_ISVTX:
        return
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
        try:
            os.chmod(path, stat.S_IMODE(info.st_mode) & 0o700)
        except OSError:
            pass
    if recursive and stat.S_ISDIR(info.st_mode):
        for child in path.iterdir():
            narrow(child, recursive=True)
