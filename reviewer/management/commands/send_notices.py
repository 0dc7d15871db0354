"""Send the inbox's e-mail that is due now (``reviewer.notice_mail``): for
cron, or a server without the serving process's timer. Safe beside running
servers: a person's notices are claimed before they are sent."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from reviewer.notice_mail import send_due


class Command(BaseCommand):
    help = "Send the notice e-mails that are due (mentions and assignments held a couple of minutes)."

    def handle(self, *args: Any, **options: Any) -> None:
        sent = send_due()
        self.stdout.write(f"{sent} message{'s' if sent != 1 else ''} sent.")
