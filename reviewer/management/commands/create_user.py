"""``manage.py create_user NAME --role reviewer --project acme [--project …]``.

Creates (or updates) a person with one role and the projects they may open.
The password comes from ``--password-file`` or is asked for; it is never
taken on the command line, where it would land in shell history.
"""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from reviewer.access import ROLES
from reviewer.models import ProjectGrant


class Command(BaseCommand):
    help = "Create or update a dashboard user with a role and the projects they may open."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", choices=ROLES, required=True)
        parser.add_argument("--project", action="append", default=[], help="a project id (repeat for several)")
        parser.add_argument("--staff", action="store_true", help="may open every project and the admin tools")
        parser.add_argument("--password-file", type=Path, help="read the password from this file's first line")

    def handle(
        self,
        *args: Any,
        username: str,
        role: str,
        project: list[str],
        staff: bool,
        password_file: Path | None,
        **options: Any,
    ) -> None:
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
            user.groups.set([Group.objects.get_or_create(name=role)[0]])
            for project_id in project:
                ProjectGrant.objects.get_or_create(user=user, project_id=project_id)
        granted = ", ".join(sorted(user.project_grants.values_list("project_id", flat=True))) or "none"
        self.stdout.write(f"{username}: {role}{' (staff)' if staff else ''}; projects: {granted}")
