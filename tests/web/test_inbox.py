"""The inbox ("For you"), its unread count and read marks, and the
overview's "since your last visit": every role, escaping, hostile sizes,
access checked again at display."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from core import _common as c
from core import _review
from core._purge import Purger
from core.notices import Notices
from core.retention import HistoryRetention
from reviewer import access, inbox
from reviewer.models import NoticeRead, ProjectMarks
from reviewer.store import get_store

from .conftest import Story

HOSTILE = "<script>alert('inbox')</script>"
KIND = '<span class="badge kind">'  # a notice's tag: why it is news


def notify(project: str, action: str, people: list[str], *, at: datetime | None = None, target: str = "", **kw: str):
    """An entry naming ``people``, as the team's actions write them."""

    def work(tx):  # type: ignore[no-untyped-def]
        _review.log_activity(
            tx, project, kw.get("actor", "stan"), action, kw.get("kind", "decision"), target,
            kw.get("summary", f"{action} on {HOSTILE}"), None, c.iso(at or datetime.now(UTC)),
            actor_kind="person", notify=people,
        )  # fmt: skip

    get_store().transact(project, work)


def notify_many(project: str, action: str, person: str, n: int, *, start: datetime, target: str) -> None:
    """``n`` entries naming ``person``, a second apart from ``start``, in one commit."""

    def work(tx):  # type: ignore[no-untyped-def]
        for i in range(n):
            at = c.iso(start + timedelta(seconds=i))
            _review.log_activity(
                tx, project, "stan", action, "decision", target, f"{action} {i}", None, at,
                actor_kind="person", notify=[person],
            )  # fmt: skip

    get_store().transact(project, work)


def unread(client: Client) -> str:
    """The top bar's unread badge ("" when there is none)."""
    found = re.search(r'class="badge unread"[^>]*>([^<]+)<', client.get("/inbox/settings").content.decode())
    return found.group(1) if found else ""


def test_every_role_sees_its_own_notices_escaped_newest_first_and_marks_them_read(
    story: Story, people: dict[str, User], as_: Any
) -> None:
    now = datetime.now(UTC)
    notify(story.project, "assign", ["vera", "rita", "stan", "otto"], at=now - timedelta(minutes=3), target=story.moved)
    notify(story.project, "comment", ["rita"], at=now - timedelta(minutes=1), target=story.changed)
    notify(story.project, "take_over", ["rita"], at=now, target=story.clear)
    for role, n in (("viewer", "1"), ("reviewer", "3"), ("steward", "1"), ("outsider", "")):
        client = as_(role)
        assert unread(client) == n, role
        page = client.get("/inbox/").content.decode()
        assert (HOSTILE not in page and "&lt;script&gt;" in page.replace("&#x27;", "'")) or role == "outsider"
        if role == "outsider":  # named, but no grant to the project: nothing from it
            assert KIND + "assigned to you" not in page and story.moved not in page
    rita = as_("reviewer")
    page = rita.get("/inbox/").content.decode()
    assert (
        page.index(KIND + "your claim taken over")
        < page.index(KIND + "mention or reply")
        < page.index(KIND + "assigned to you")
    )
    assert f"/p/{story.project}/decisions/{story.clear}/" in page
    assert "For you" in rita.get(f"/p/{story.project}/").content.decode()  # one click from every page
    entry = re.search(r'name="entry" value="([^"]+)">\s*<input type="hidden" name="at" value="([^"]+)"', page)
    assert entry
    assert rita.post("/inbox/read", {"project": story.project, "entry": entry[1], "at": entry[2]}).status_code == 302
    assert unread(rita) == "2"
    assert rita.post("/inbox/read-all", {}).status_code == 302
    assert unread(rita) == ""
    assert 'class="notice unread"' not in rita.get("/inbox/").content.decode()
    notify(story.project, "assign", ["rita"], target=story.xss)  # news after "mark all read"
    assert unread(rita) == "1"
    # access is checked again at display: a lost grant hides the project's notices
    access.revoke(people["reviewer"], story.project)
    assert unread(rita) == "" and KIND + "assigned to you" not in rita.get("/inbox/").content.decode()


def test_inbox_refuses_hostile_input_and_projects_the_person_cannot_open(story: Story, as_: Any) -> None:
    rita = as_("reviewer")
    notify(story.project, "assign", ["rita"], target=story.moved)
    for data in (
        {"project": story.project, "entry": "x" * 10_000, "at": c.iso(datetime.now(UTC))},
        {"project": story.project, "entry": "e", "at": "not a time " * 1000},
        {"project": story.project, "entry": "e", "at": "2026-01-01T00:00:00"},  # no time zone
    ):
        assert rita.post("/inbox/read", data, follow=True).status_code == 200
    assert unread(rita) == "1"  # nothing was marked
    assert (
        rita.post("/inbox/read", {"project": "elsewhere", "entry": "e", "at": c.iso(datetime.now(UTC))}).status_code
        == 404
    )
    assert rita.get("/inbox/", {"project": "x" * 10_000}).status_code == 404
    assert rita.get("/inbox/", {"before": "z" * 10_000}).status_code == 200
    assert rita.get("/inbox/", {"project": story.project}).status_code == 200
    assert Client().get("/inbox/").status_code == 302  # signed out: the login page


def test_since_your_last_visit_moves_on_explicit_acts_and_tells_what_others_changed(
    story: Story, people: dict[str, User], as_: Any
) -> None:
    rita, overview = as_("reviewer"), f"/p/{story.project}/"
    assert "You have not marked anything seen" in rita.get(overview).content.decode()
    for role, status in (("viewer", 302), ("reviewer", 302), ("steward", 302), ("outsider", 404)):
        assert as_(role).post(overview + "seen").status_code == status, role
    # what others do afterwards
    HistoryRetention(get_store(), project_id=story.project, agent_id="stan").redact_event(story.event_id, reason="pii")
    Purger.kick(get_store(), now=True).wait()  # its disk purge done before the store closes
    stan = as_("steward")
    data = {"reason": "wrong", "request_id": "since-1"}
    assert stan.post(f"/p/{story.project}/decisions/{story.changed}/reject", data).status_code in (200, 302)
    notify(story.project, "comment", ["rita"], actor="stan", target=story.moved)
    for _ in range(2):  # a page load moves nothing
        page = rita.get(overview).content.decode()
        assert "2 newly flagged" in page and "1 decision settled by others" in page and "1 new comment" in page
    queue = rita.get(f"/p/{story.project}/review/").content.decode()
    cards = {m[1]: m[2] for m in re.finditer(r'id="d-([0-9a-f-]+)"(.*?)</header>', queue, re.S)}
    assert "new to you" in cards[story.xss] and "new to you" not in cards[story.moved]
    # a verdict moves it
    data = {"explanation": "still fine", "request_id": "since-2"}
    assert rita.post(f"/p/{story.project}/decisions/{story.moved}/reaffirm", data).status_code in (200, 302)
    page = rita.get(overview).content.decode()
    assert "Nothing changed since then." in page
    assert "new to you" not in rita.get(f"/p/{story.project}/review/").content.decode()


def test_the_top_bar_counts_once_per_page_and_a_page_load_moves_no_mark(
    story: Story, as_: Any, monkeypatch: Any
) -> None:
    store, counted = get_store(), []
    real = store.read

    def read(project: str, query: str, params: Any = None) -> Any:
        if "MATCH (n:Notice)" in query:
            counted.append(project)
        return real(project, query, params)

    monkeypatch.setattr(store, "read", read)
    rita = as_("reviewer")
    notify(story.project, "assign", ["rita"], target=story.moved)
    assert rita.get(f"/p/{story.project}/").status_code == 200
    assert counted == [story.project]  # one bounded count, for the one project rita may open
    assert rita.get(f"/p/{story.project}/review/").status_code == 200
    assert not ProjectMarks.objects.filter(user__username="rita").exists()  # pages loaded, nothing marked


def test_a_comment_is_an_explicit_act_that_moves_the_mark(story: Story, as_: Any) -> None:
    rita = as_("reviewer")
    assert not ProjectMarks.objects.filter(user__username="rita", project_id=story.project).exists()
    refused = rita.post(f"/p/{story.project}/decisions/{story.moved}/comments", {"body": "", "request_id": "seen-0"})
    assert refused.status_code == 400  # a refused comment is no act
    assert not ProjectMarks.objects.filter(user__username="rita", project_id=story.project).exists()
    posted = rita.post(f"/p/{story.project}/decisions/{story.moved}/comments", {"body": "Why?", "request_id": "seen-1"})
    assert posted.status_code in (200, 302)
    mark = ProjectMarks.objects.get(user__username="rita", project_id=story.project)
    assert mark.looked_at is not None and datetime.now(UTC) - mark.looked_at < timedelta(minutes=1)


def test_the_inbox_lists_the_persons_claims_ending_soon(story: Story, as_: Any) -> None:
    from core.claims import Claims

    claims = Claims(get_store(), project_id=story.project, agent_id="rita")
    assert claims.set_lease_minutes(3).recorded and claims.claim("decision", story.moved).recorded
    rita, sam = as_("reviewer"), as_("steward")
    page = rita.get("/inbox/").content.decode()
    assert "Your claims ending soon" in page and f"/decisions/{story.moved}/" in page
    assert "Your claims ending soon" not in sam.get("/inbox/").content.decode()  # not theirs
    assert claims.release("decision", story.moved).recorded
    assert "Your claims ending soon" not in rita.get("/inbox/").content.decode()


def test_mark_read_stores_only_the_persons_own_notices_at_the_stores_time(
    story: Story, people: dict[str, User], as_: Any
) -> None:
    p, rita = story.project, as_("reviewer")
    notify(p, "assign", ["rita"], target=story.moved)
    notify(p, "assign", ["vera"], target=story.changed)  # vera's, not rita's
    [mine] = Notices(get_store(), project_id=p).page("rita")
    [hers] = Notices(get_store(), project_id=p).page("vera")
    for entry in (hers.entry.id, "0" * 36, "made-up"):  # not rita's notices: nothing stored
        data = {"project": p, "entry": entry, "at": c.iso(datetime.now(UTC))}
        assert rita.post("/inbox/read", data, follow=True).status_code == 200
    assert not NoticeRead.objects.exists() and unread(rita) == "1"
    # the client's time is not trusted: the store's is kept
    data = {"project": p, "entry": mine.entry.id, "at": "2000-01-01T00:00:00+00:00"}
    assert rita.post("/inbox/read", data).status_code == 302
    [row] = NoticeRead.objects.all()
    assert row.at == mine.entry.at and unread(rita) == ""
    # rows the read-up-to mark covers are dropped when the next one is read
    inbox.mark_all_read(people["reviewer"], [p], now=datetime.now(UTC) + timedelta(seconds=1))
    NoticeRead.objects.create(user=people["reviewer"], project_id=p, entry_id="old", at=mine.entry.at)
    notify(p, "assign", ["rita"], at=datetime.now(UTC) + timedelta(minutes=1), target=story.clear)
    newer = Notices(get_store(), project_id=p).page("rita", limit=1)[0]
    assert inbox.mark_read(people["reviewer"], get_store(), p, newer.entry.id)
    assert list(NoticeRead.objects.values_list("entry_id", flat=True)) == [newer.entry.id]


def test_the_badge_takes_reads_away_before_its_cap(story: Story, people: dict[str, User], as_: Any) -> None:
    p, rita, rita_user = story.project, as_("reviewer"), people["reviewer"]
    notify_many(p, "assign", "rita", 170, start=datetime.now(UTC) - timedelta(hours=1), target=story.moved)
    for n in Notices(get_store(), project_id=p).page("rita", limit=60):
        assert inbox.mark_read(rita_user, get_store(), p, n.entry.id)
    assert NoticeRead.objects.filter(user=rita_user).count() == 60
    assert unread(rita) == "99+"  # 110 unread: not the capped 100 less 60
    for n in Notices(get_store(), project_id=p).page("rita", limit=100)[60:]:
        inbox.mark_read(rita_user, get_store(), p, n.entry.id)
    assert unread(rita) == "70"
