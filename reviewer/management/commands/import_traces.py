"""``manage.py import_traces FILE [--project P]``: apply a JSON Lines file of
core operations (the format is in ``core/traces_io.py`` and docs/traces-format.md).

Each line runs as its own write with its own request id, so importing the
same file twice changes nothing the second time. A bad line is reported with
its number and reason and the import goes on; the command exits non-zero if
any line failed. ``-`` reads standard input.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.stores import GraphStoreError
from core.traces_io import LineError, import_lines
from reviewer.store import check_store


class Command(BaseCommand):
    help = "Import a JSON Lines file of traces (one core operation a line)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the file to import, or - for standard input")
        parser.add_argument("--project", help="import every line into this project (default: each line's own)")

    def handle(self, *args: Any, file: str, project: str | None, **options: Any) -> None:
        try:
            source = sys.stdin if file == "-" else Path(file).open(encoding="utf-8")  # noqa: SIM115 (the with below closes it)
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc.strerror}") from exc
        applied = failed = 0
        last_report = time.monotonic()
        try:
            store = check_store()
            with source, store.unhurried():  # a big import is long on purpose
                for number, outcome in import_lines(store, source, project=project):
                    if isinstance(outcome, LineError):
                        failed += 1
                        self.stderr.write(f"line {number}: {outcome}")
                    else:
                        applied += 1
                    if time.monotonic() - last_report > 2:
                        last_report = time.monotonic()
                        self.stderr.write(f"… line {number:,}: {applied:,} applied, {failed:,} failed")
        except GraphStoreError as exc:
            raise CommandError(f"the graph store is not answering: {exc}") from exc
        except UnicodeDecodeError as exc:
            raise CommandError(f"{file} is not UTF-8 text: {exc.reason}") from exc
        self.stdout.write(f"{applied:,} lines applied, {failed:,} failed")
        if failed:
            raise CommandError(f"{failed:,} line(s) failed; the others were applied")
