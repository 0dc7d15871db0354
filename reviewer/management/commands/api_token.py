"""``manage.py api_token create|list|revoke --project P …``: a project's API
tokens from the command line (the dashboard's tokens page does the same).

``create --name N --agent-id A [--role automation]`` prints the token once,
alone on stdout (``TOKEN=$(manage.py api_token create …)`` works); only its
hash is kept.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reviewer.api.tokens import TokenError, create_token, revoke
from reviewer.models import ApiToken


class Command(BaseCommand):
    help = "Create, list or revoke a project's API tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["create", "list", "revoke"])
        parser.add_argument("--project", required=True)
        parser.add_argument("--name", help="create: what the token is for")
        parser.add_argument("--agent-id", help="create: the author of what it writes; revoke: whose token")
        parser.add_argument("--role", choices=[ApiToken.AGENT, ApiToken.AUTOMATION], default=ApiToken.AGENT)

    def handle(
        self, *args: Any, action: str, project: str, name: str | None, agent_id: str | None, role: str, **options: Any
    ) -> None:
        if action == "create":
            if not name or not agent_id:
                raise CommandError("create needs --name and --agent-id")
            try:
                record, token = create_token(project_id=project, name=name, agent_id=agent_id, role=role)
            except TokenError as exc:
                raise CommandError(str(exc)) from None
            self.stderr.write(
                f"token {record.name!r} for agent {record.agent_id!r} in {project} ({record.role}); shown once:"
            )
            self.stdout.write(token)
        elif action == "list":
            for t in ApiToken.objects.filter(project_id=project).order_by("name"):
                state = f"revoked {t.revoked_at:%Y-%m-%d %H:%M}" if t.revoked_at else "live"
                used = f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never"
                self.stdout.write(f"{t.agent_id}\t{t.name}\t{t.role}\t{t.prefix}…\t{state}\tlast used {used}")
        else:
            record = ApiToken.objects.filter(project_id=project, agent_id=agent_id or "").first()
            if record is None:
                raise CommandError(f"no token of agent {agent_id!r} in {project}")
            revoke(record)
            self.stdout.write(f"revoked the token of {record.agent_id} in {project}")
