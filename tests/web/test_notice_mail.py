"""The inbox's e-mail (reviewer/notice_mail.py) through a real SMTP server
the test starts (aiosmtpd): held, combined per person, skipped if read,
on and off per person, links and never agent or comment text, access
checked again at send time, and two senders never send one notice twice."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email import message_from_bytes
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewer import access, inbox
from reviewer.models import NoticePrefs
from reviewer.notice_mail import Mailer, send_due
from reviewer.store import get_store

from .conftest import Story
from .test_inbox import HOSTILE, notify, notify_many


class Inbox:
    """What the SMTP server received."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content)))
        return "250 OK"


@pytest.fixture
def smtp(settings: Any) -> Iterator[Inbox]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    received = Inbox()
    controller = Controller(received, hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.REVIEWER_NOTICE_HOLD_S = 120
    settings.REVIEWER_BASE_URL = "https://reviewer.example"
    try:
        yield received
    finally:
        controller.stop()


def email_on(user: User, since: datetime) -> None:
    user.email = f"{user.username}@example.com"
    user.save()
    NoticePrefs.objects.update_or_create(user=user, defaults={"email": True, "mailed_until": since})


def body(message: Any) -> str:
    return message.get_payload(decode=True).decode()


@pytest.mark.django_db(transaction=True)
def test_mentions_and_assignments_are_held_combined_skipped_if_read_and_carry_links_only(
    story: Story, people: dict[str, User], smtp: Inbox
) -> None:
    now = datetime.now(UTC)
    rita, vera = people["reviewer"], people["viewer"]
    email_on(rita, now - timedelta(minutes=30))
    vera.email = "vera@example.com"
    vera.save()  # an address, but e-mail off (the default)
    p = story.project
    notify(p, "assign", ["rita", "vera"], at=now - timedelta(minutes=5), target=story.moved)
    notify(p, "comment", ["rita"], at=now - timedelta(minutes=4), target=story.changed)
    notify(p, "comment", ["rita"], at=now - timedelta(minutes=3), target=story.clear)  # read in the app
    notify(p, "claim", ["rita"], at=now - timedelta(minutes=4), target=story.xss)  # not an e-mail action
    notify(p, "assign", ["rita"], at=now - timedelta(seconds=30), target=story.xss)  # held
    read = inbox.page(rita, get_store(), project=p, before=None)[0]
    clear = next(i for i in read if i.notice.entry.target_id == story.clear)
    assert inbox.mark_read(rita, get_store(), p, clear.notice.entry.id)

    assert send_due(now=now) == 1
    [(to, message)] = smtp.messages
    text = body(message)
    assert to == ["rita@example.com"] and "2 things" in message["Subject"]
    assert f"https://reviewer.example/p/{p}/decisions/{story.moved}/" in text
    assert f"https://reviewer.example/p/{p}/decisions/{story.changed}/" in text
    assert story.clear not in text and story.xss not in text  # read; held or not an e-mail action
    # links only: no conclusion, no summary, nothing an agent or a comment wrote
    assert "Postgres" not in text and "One hour" not in text and HOSTILE not in text and "on <" not in text

    assert send_due(now=now) == 0  # nothing new is due: nothing sent twice
    assert send_due(now=now + timedelta(minutes=3)) == 1  # the held one, now due
    assert story.xss in body(smtp.messages[-1][1]) and story.moved not in body(smtp.messages[-1][1])

    # off: nothing; a lost grant: nothing from that project
    notify(p, "assign", ["rita"], at=now + timedelta(minutes=1), target=story.moved)
    NoticePrefs.objects.filter(user=rita).update(email=False)
    assert send_due(now=now + timedelta(minutes=10)) == 0
    NoticePrefs.objects.filter(user=rita).update(email=True)
    notify(p, "assign", ["rita"], at=now + timedelta(minutes=11), target=story.moved)
    access.revoke(rita, p)
    assert send_due(now=now + timedelta(minutes=20)) == 0
    assert len(smtp.messages) == 2


@pytest.mark.django_db(transaction=True)
def test_two_senders_at_once_send_each_notice_once_and_the_timer_sends_what_comes_due(
    story: Story, people: dict[str, User], smtp: Inbox, settings: Any
) -> None:
    now = datetime.now(UTC)
    email_on(people["steward"], now - timedelta(minutes=30))
    notify(story.project, "assign", ["stan"], at=now - timedelta(minutes=5), target=story.moved)
    start = threading.Barrier(3)
    sent: list[int] = []

    def sender() -> None:
        start.wait()
        sent.append(send_due(now=now))

    threads = [threading.Thread(target=sender) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(sent) == [0, 0, 1] and len(smtp.messages) == 1
    call_command("send_notices")  # the command: nothing more is due
    assert len(smtp.messages) == 1
    # the serving process's timer sends what comes due
    notify(story.project, "assign", ["stan"], target=story.changed)
    settings.REVIEWER_NOTICE_EMAIL, settings.REVIEWER_NOTICE_HOLD_S = True, 0
    assert Mailer.watch(every=0.2) and not Mailer.watch(every=0.2)  # one timer per process
    try:
        deadline = time.monotonic() + 30
        while len(smtp.messages) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        Mailer.unwatch()
    assert len(smtp.messages) == 2 and story.changed in body(smtp.messages[1][1])


def test_the_preferences_form_turns_email_on_and_off_for_the_person_only(story: Story, as_: Any) -> None:
    rita = as_("reviewer")
    page = rita.get("/inbox/settings").content.decode()
    assert "E-mail me when I am mentioned or assigned" in page and "checked" not in page  # off by default
    assert rita.post("/inbox/settings", {"email": "on"}).status_code == 302
    prefs = NoticePrefs.objects.get(user__username="rita")
    assert prefs.email and prefs.mailed_until is not None  # from now on: nothing from before is sent
    assert "checked" in rita.get("/inbox/settings").content.decode()
    assert not NoticePrefs.objects.filter(user__username="vera").exists()
    assert rita.post("/inbox/settings", {}).status_code == 302
    assert not NoticePrefs.objects.get(user__username="rita").email


@pytest.mark.django_db(transaction=True)
def test_more_due_than_one_page_are_all_mailed_over_rounds_in_few_queries(
    story: Story, people: dict[str, User], smtp: Inbox
) -> None:
    now = datetime.now(UTC)
    rita = people["reviewer"]
    email_on(rita, now - timedelta(hours=1))
    notify_many(story.project, "assign", "rita", 130, start=now - timedelta(minutes=50), target=story.moved)
    with CaptureQueriesContext(connection) as round_one:
        assert send_due(now=now) == 1
    assert len(round_one) < 20  # not two per notice
    assert send_due(now=now) == 1  # what did not fit the first round's page
    assert send_due(now=now) == 0
    counts = [int(body(m).split(" thing")[0]) for _, m in smtp.messages]
    assert sum(counts) == 130 and counts[0] < 130  # every one told once, oldest first
