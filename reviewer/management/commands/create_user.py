"""``manage.py create_user NAME --grant acme=reviewer [--grant beta=steward …]``.

Creates (or updates) a person and gives them a role in each named project
(roles are per project: reviewer in one, steward in another). The older
form ``--role reviewer --project acme [--project …]`` still works: it gives
that one role in each ``--project``. ``--revoke acme`` takes a project
away. Grants not named are left as they are.
The password comes from ``--password-file`` or is asked for; it is never
taken on the command line, where it would land in shell history.
"""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from reviewer import access
from reviewer.access import ROLES


def _grant(value: str) -> tuple[str, str]:
    project, sep, role = value.rpartition("=")
    if not sep or not project.strip() or role not in ROLES:
        raise CommandError(f"--grant takes PROJECT=ROLE with ROLE one of {', '.join(ROLES)}; got {value!r}")
    return project.strip(), role


class Command(BaseCommand):
    help = "Create or update a dashboard user and their role in each project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--grant", action="append", default=[], metavar="PROJECT=ROLE", help="a role in one project (repeat)"
        )
        parser.add_argument("--revoke", action="append", default=[], metavar="PROJECT", help="take a project away")
        parser.add_argument("--role", choices=ROLES, help="the role for each --project (older form)")
        parser.add_argument("--project", action="append", default=[], help="a project id for --role (repeat)")
        parser.add_argument("--staff", action="store_true", help="may open every project and the admin tools")
        parser.add_argument("--password-file", type=Path, help="read the password from this file's first line")

    def handle(
        self,
        *args: Any,
        username: str,
        grant: list[str],
        revoke: list[str],
        role: str | None,
        project: list[str],
        staff: bool,
        password_file: Path | None,
        **options: Any,
    ) -> None:
        if project and role is None:
            raise CommandError("--project needs --role (or use --grant PROJECT=ROLE)")
        if role is not None and not project:
            raise CommandError("--role applies to each --project; name one (or use --grant PROJECT=ROLE)")
        grants = [_grant(g) for g in grant] + [(p.strip(), role) for p in project if role]
        for project_id, _ in grants:
            if not project_id or len(project_id) > 200 or "\x00" in project_id:
                raise CommandError("a project id is 1 to 200 characters without NUL")
        users = get_user_model()
        user = users.objects.filter(username=username).first()
        password = None
        if password_file is not None:
            try:
                password = password_file.read_text().splitlines()[0]
            except (OSError, IndexError) as exc:
                raise CommandError(f"cannot read a password from {password_file}: {exc}") from exc
        elif user is None:
            password = getpass.getpass(f"Password for {username}: ")
        if password is not None:
            try:
                validate_password(password, user)
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from exc
        with transaction.atomic():
            if user is None:
                user = users.objects.create_user(username, password=password)
            elif password is not None:
                user.set_password(password)
            user.is_staff = staff
            user.save()
            for project_id, project_role in grants:
                access.grant(user, project_id, project_role)
            for project_id in revoke:
                access.revoke(user, project_id.strip())
        granted = ", ".join(f"{p}={r}" for p, r in sorted(access.roles_of(user).items())) or "none"
        self.stdout.write(f"{username}{' (staff: steward everywhere)' if staff else ''}; projects: {granted}")
