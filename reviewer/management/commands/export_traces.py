"""``manage.py export_traces --project P [--output FILE]``: write a project
out as JSON Lines of core operations, in the order they happened, in the
format ``import_traces`` reads (see ``core/traces_io.py``)."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.stores import GraphStoreError
from core.traces_io import export_project
from reviewer.store import check_store


class Command(BaseCommand):
    help = "Export a project's traces as JSON Lines (one core operation a line)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--output", type=Path, help="write here instead of standard output")

    def handle(self, *args: Any, project: str, output: Path | None, **options: Any) -> None:
        try:
            store = check_store()
            if project not in store.list_projects():
                raise CommandError(f"no project {project!r} in the store")
            target = output.open("w", encoding="utf-8") if output else sys.stdout
            count = 0
            with target if output else nullcontext(target) as out, store.unhurried():  # long on purpose
                for line in export_project(store, project):
                    out.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
                    count += 1
        except GraphStoreError as exc:
            raise CommandError(f"the graph store is not answering: {exc}") from exc
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror}") from exc
        self.stderr.write(f"{count:,} operations exported from {project}")
