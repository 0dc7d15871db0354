"""The dashboard's app: on start, its data files are made the owner's alone."""

from __future__ import annotations

from django.apps import AppConfig


class ReviewerConfig(AppConfig):
    name = "reviewer"

    def ready(self) -> None:
        secure_data_files()


def secure_data_files() -> None:
    """The data directory 0700; the SQLite auth database created 0600 before
    SQLite opens it (its journal and WAL files take the database's mode), and
    narrowed if an older version left it wider."""
    from pathlib import Path

    from django.conf import settings

    from core.stores.private import narrow, private_dir, private_file

    narrow(settings.DATA_DIR)
    database = settings.DATABASES["default"]
    name = str(database.get("NAME") or "")
    if database["ENGINE"] != "django.db.backends.sqlite3" or not name or name == ":memory:" or "mode=memory" in name:
        return
    path = Path(name)
    private_dir(path.parent, narrow_existing=False)
    private_file(path)
    for suffix in ("-journal", "-wal", "-shm"):
        narrow(path.with_name(path.name + suffix))
