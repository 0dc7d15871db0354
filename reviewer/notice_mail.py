"""The inbox's optional e-mail: mentions and assignments, sent through
Django's e-mail settings (SMTP).

A notice waits ``REVIEWER_NOTICE_HOLD_S`` (two minutes) before it is due;
what is due for a person is combined into one message, and a notice they
read in the app meanwhile is left out (a message with nothing left is not
sent). A message carries links only: never agent text or comment text,
which a redaction could not take back from a sent e-mail (not a
decision's conclusion, not an activity summary; an agent's name neither).

Who sends: ``send_due`` (the ``send_notices`` command, or the timer each
serving process starts, ``Mailer.watch``). Each person's ``mailed_until``
says up to when their notices were considered; a sender claims a person
by moving it with a conditional update (``UPDATE ... WHERE mailed_until =
what it read``), so of two processes only one sends a person's notices,
and a failed send puts the mark back for the next round.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage
from django.db import connections
from django.urls import reverse

from core import limits
from core.models import Notice
from core.notices import Notices
from core.stores import GraphStore, GraphStoreError

from . import inbox
from .models import NoticePrefs

log = logging.getLogger(__name__)

#: the actions an e-mail tells of: mentions (and replies: a comment entry
#: names both) and assignments
EMAIL_ACTIONS = ("comment", "assign")
#: notices one message lists (the rest: "and N more")
LINES_MAX = 50
#: people one round looks at; the rest wait for the next round
PEOPLE_PER_ROUND = 500


def send_due(*, now: datetime | None = None, store: GraphStore | None = None) -> int:
    """Send every message that is due now; how many were sent."""
    now = now or datetime.now(UTC)
    cutoff = now - timedelta(seconds=settings.REVIEWER_NOTICE_HOLD_S)
    if settings.REVIEWER_NOTICE_EMAIL_DEFAULT:
        _default_prefs(now)
    if store is None:
        from .store import get_store

        store = get_store()
    sent = 0
    people = (
        NoticePrefs.objects.filter(email=True, user__is_active=True)
        .exclude(user__email="")
        .select_related("user")
        .order_by("mailed_until")[:PEOPLE_PER_ROUND]
    )
    for prefs in people:
        before = prefs.mailed_until
        if before is not None and before >= cutoff:
            continue
        # the claim: only the process whose update moved the mark sends
        if not NoticePrefs.objects.filter(pk=prefs.pk, email=True, mailed_until=before).update(mailed_until=cutoff):
            continue
        try:
            n, upto = _send_one(prefs.user, store, before, cutoff)
            sent += n
            if upto < cutoff:  # a full page: the rest waits for the next round, from where this one stopped
                NoticePrefs.objects.filter(pk=prefs.pk, mailed_until=cutoff).update(mailed_until=upto)
        except (GraphStoreError, OSError) as exc:  # the store or the SMTP server: the next round tries again
            NoticePrefs.objects.filter(pk=prefs.pk, mailed_until=cutoff).update(mailed_until=before)
            log.warning("notice e-mail to user %s not sent: %s", prefs.user.pk, exc)
    return sent


def _default_prefs(now: datetime) -> None:
    """With e-mail on by default: a row for each person who has not chosen,
    starting now (nothing from before is sent)."""
    users = get_user_model().objects.filter(is_active=True, notice_prefs__isnull=True).exclude(email="")
    NoticePrefs.objects.bulk_create(
        [NoticePrefs(user=u, email=True, mailed_until=now) for u in users[:PEOPLE_PER_ROUND]], ignore_conflicts=True
    )


def _send_one(user: Any, store: GraphStore, after: datetime | None, until: datetime) -> tuple[int, datetime]:
    """Send the person's message (1, or 0 if nothing is left), and up to
    when their notices were considered."""
    lines, upto = due_lines(user, store, after, until)
    if not lines:
        return 0, upto
    n = len(lines)
    if n > LINES_MAX:
        lines = lines[:LINES_MAX] + [f"... and {n - LINES_MAX} more in Reviewer."]
    body = [f"{n} thing{'s' if n != 1 else ''} in Reviewer named you:", ""]
    for line in lines:
        body += [line, ""]
    base = settings.REVIEWER_BASE_URL
    body += [
        f"Everything for you: {base}{reverse('inbox')}",
        f"E-mail preferences: {base}{reverse('inbox_preferences')}",
    ]
    EmailMessage(
        subject=f"Reviewer: {n} thing{'s' if n != 1 else ''} for you",
        body="\n".join(body) + "\n",
        to=[user.email],
    ).send()
    return 1, upto


def due_lines(user: Any, store: GraphStore, after: datetime | None, until: datetime) -> tuple[list[str], datetime]:
    """One line per notice due for ``user`` (after ``after``, up to
    ``until``, of ``EMAIL_ACTIONS``, unread) in the projects they may open
    now: who (a person; an agent is not named), what, and a link; and up
    to when that is all of them. Each project is read oldest first, one
    bounded page: where a page is full, what comes after its last notice
    is left for the next round (``until`` moves back to before it, and
    what this round read after that is left too, so nothing is skipped
    and nothing sent twice)."""
    found: list[tuple[str, Notice]] = []
    upto = until
    for pid in inbox.projects(user, store):
        page = Notices(store, project_id=pid).page(
            user.get_username(),
            before=(until + timedelta(microseconds=1)).astimezone(UTC).isoformat(timespec="microseconds"),
            after=after,
            actions=EMAIL_ACTIONS,
            limit=limits.NOTICES_PAGE_MAX,
            oldest_first=True,
        )
        if len(page) >= limits.NOTICES_PAGE_MAX:
            # the last notice's time may have more beyond the page: stop just before it
            last = page[-1].entry.at - timedelta(microseconds=1)
            if after is None or last > after:
                upto = min(upto, last)
            else:  # one page of notices all at one moment: take it whole
                upto = min(upto, page[-1].entry.at)
        found += [(pid, n) for n in page]
    lines = []
    base = settings.REVIEWER_BASE_URL
    by_project: dict[str, list[Notice]] = {}
    for pid, n in found:
        if n.entry.at <= upto:
            by_project.setdefault(pid, []).append(n)
    for pid, notices in by_project.items():
        is_read = inbox.read_checker(user, pid, [n.entry.id for n in notices])
        for n in notices:  # oldest first, as they happened
            e = n.entry
            if is_read(e.id, e.at):
                continue
            item = inbox.Item(pid, n, True)
            who = e.actor if e.actor_kind == "person" else "An agent"
            if item.decision:
                link = base + reverse("decision", args=(pid, item.decision))
            else:
                link = base + reverse("inbox") + "?project=" + pid
            lines.append(f"{who} in {pid} ({item.label}):\n  {link}")
    return lines, upto


class Mailer:
    """The serving process's timer: ``send_due`` every
    ``REVIEWER_NOTICE_EVERY_S`` in a daemon thread, started once per process
    (every worker may run one: the claim keeps sends single)."""

    _lock = threading.Lock()
    _stop: threading.Event | None = None

    @classmethod
    def watch(cls, *, every: float | None = None) -> bool:
        """Start the timer, if e-mail is set up and it is not running."""
        if not settings.REVIEWER_NOTICE_EMAIL:
            return False
        with cls._lock:
            if cls._stop is not None:
                return False
            stop = cls._stop = threading.Event()
        interval = settings.REVIEWER_NOTICE_EVERY_S if every is None else every

        def loop() -> None:
            while not stop.wait(interval):
                try:
                    send_due()
                except Exception as exc:  # a round that failed: said, and the next one tries again
                    log.warning("notice e-mail round failed: %s", exc)
                finally:
                    connections.close_all()  # this thread's own connections

        threading.Thread(target=loop, name="reviewer-notice-mail", daemon=True).start()
        return True

    @classmethod
    def unwatch(cls) -> None:
        with cls._lock:
            stop, cls._stop = cls._stop, None
        if stop is not None:
            stop.set()
