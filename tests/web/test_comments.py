"""Issue 32 on the dashboard: the discussion partial on a decision's page,
mentions and their autocomplete, the queue card's comment line; every role
× action, cross-project ids, escaping, bad input kept beside its form."""

from __future__ import annotations

import re
import uuid
from typing import Any

from core.comments import Discussion
from core.models import CommentState
from reviewer.store import get_store

from .conftest import make_user


def _discussion(story: Any, who: str) -> Discussion:
    return Discussion(get_store(), project_id=story.project, agent_id=who)


def _thread(story: Any, who: str = "rita", text: str = "Why Postgres?") -> Any:
    posted = _discussion(story, who).post_comment(story.moved, text)
    assert posted.recorded
    return posted.comment


def _rid() -> str:
    return uuid.uuid4().hex


def test_every_role_and_action(story: Any, as_: Any) -> None:
    p = f"/p/{story.project}"
    page = f"{p}/decisions/{story.moved}/"
    mine = {role: _thread(story, name, f"by {name}") for role, name in (("reviewer", "rita"), ("steward", "stan"))}
    for role, may_comment, may_steward in (
        ("viewer", False, False),
        ("reviewer", True, False),
        ("steward", True, True),
        ("outsider", False, False),
    ):
        client = as_(role)
        shown = client.get(page)
        if role == "outsider":
            assert shown.status_code == 404
            assert (
                client.post(f"{p}/decisions/{story.moved}/comments", {"body": "x", "request_id": _rid()}).status_code
                == 404
            )
            assert client.get(f"{p}/people/mentions?q=r").status_code == 404
            assert client.get(f"{p}/comments/{mine['reviewer'].id}/redact").status_code == 404
            continue
        html = shown.content.decode()
        assert "by stan" in html and 'id="discussion"' in html
        assert ('id="new-thread"' in html) == may_comment and ("Redact…" in html) == may_steward
        new = client.post(f"{p}/decisions/{story.moved}/comments", {"body": f"from {role}", "request_id": _rid()})
        assert new.status_code == (302 if may_comment else 403)
        reply = client.post(
            f"{p}/decisions/{story.moved}/comments",
            {"body": "re", "thread_id": mine["reviewer"].thread_id, "request_id": _rid()},
        )
        assert reply.status_code == (302 if may_comment else 403)
        resolve = client.post(
            f"{p}/threads/{mine['reviewer'].thread_id}/resolve", {"resolved": "1", "request_id": _rid()}
        )
        assert resolve.status_code == (302 if may_comment else 403)
        assert client.get(f"{p}/people/mentions?q=").status_code == (200 if may_comment else 403)
        assert client.get(f"{p}/comments/{mine['reviewer'].id}/redact").status_code == (200 if may_steward else 403)
        # deleting another's comment: a steward only; one's own: any reviewer
        other = mine["steward"] if role == "reviewer" else mine["reviewer"]
        gone = client.post(f"{p}/comments/{other.id}/delete", {"request_id": _rid()})
        assert gone.status_code == (302 if may_steward else 403)
        if may_comment:
            own = mine[role]
            assert client.get(f"{p}/comments/{own.id}/edit").status_code == 200
            edited = client.post(f"{p}/comments/{own.id}/edit", {"body": f"edited by {role}", "request_id": _rid()})
            assert edited.status_code == 302
    assert _discussion(story, "x").get_comment(mine["reviewer"].id).state == CommentState.deleted  # by the steward
    assert _discussion(story, "x").get_comment(mine["steward"].id).state == CommentState.live
    bodies = [x.body for t in _discussion(story, "x").list_threads(story.moved).threads for x in t.comments]
    assert "edited by steward" in bodies and "from viewer" not in bodies
    # someone else's comment cannot be edited, even by a steward
    theirs = _thread(story, "rita", "rita's")
    refused = as_("steward").post(f"{p}/comments/{theirs.id}/edit", {"body": "mine", "request_id": _rid()})
    assert refused.status_code == 400 and "Only its author" in refused.content.decode()
    # a steward redacts through the confirmation page
    client = as_("steward")
    done = client.post(f"{p}/comments/{theirs.id}/redact", {"reason": "pii", "confirm": "on", "request_id": _rid()})
    assert done.status_code == 302
    assert _discussion(story, "x").get_comment(theirs.id).state == CommentState.redacted
    unconfirmed = client.post(f"{p}/comments/{mine['steward'].id}/redact", {"reason": "x", "request_id": _rid()})
    assert unconfirmed.status_code == 400 and "Tick the box" in unconfirmed.content.decode()


def test_ids_of_another_project_are_not_found(story: Any, people: Any) -> None:
    other = "web-other-" + uuid.uuid4().hex[:6]
    both = make_user("bo", "steward", [story.project, other])
    from django.test import Client

    client = Client()
    client.force_login(both)
    comment = _thread(story)
    q = f"/p/{other}"
    assert client.post(f"{q}/decisions/{story.moved}/comments", {"body": "x", "request_id": _rid()}).status_code == 404
    assert client.post(f"{q}/comments/{comment.id}/delete", {"request_id": _rid()}).status_code == 404
    assert client.get(f"{q}/comments/{comment.id}/edit").status_code == 404
    assert client.get(f"{q}/comments/{comment.id}/redact").status_code == 404
    assert client.post(f"{q}/threads/{comment.thread_id}/resolve", {"request_id": _rid()}).status_code == 404
    assert _discussion(story, "x").get_comment(comment.id).state == CommentState.live


def test_text_and_mentions_are_escaped_and_mentions_checked(story: Any, as_: Any, people: Any) -> None:
    p = f"/p/{story.project}"
    client = as_("steward")
    payload = '<script>alert("c")</script><img src=x onerror=alert(2)> @rita @otto @<b>x</b>'
    posted = client.post(f"{p}/decisions/{story.moved}/comments", {"body": payload, "request_id": _rid()})
    assert posted.status_code == 302
    comment = _discussion(story, "x").list_threads(story.moved).threads[0].comments[0]
    assert comment.mentions == ["rita"]  # otto cannot see the project: plain text
    html = client.get(f"{p}/decisions/{story.moved}/").content.decode()
    assert '<script>alert("c")' not in html and "<img src=x" not in html and "<b>x</b>" not in html
    assert "&lt;script&gt;" in html and '<span class="mention">' in html
    assert re.search(r'<span class="mention">(<[^>]+>)*@rita', html)
    assert not re.search(r'<span class="mention">(<[^>]+>)*@otto', html)
    queue = client.get(f"{p}/review/").content.decode()
    assert "1 comment</a>" in queue and "&lt;script&gt;alert" in queue and '<script>alert("c")' not in queue
    entry = [e for e in client.get(f"{p}/activity/").content.decode().split("\n") if "commented on" in e]
    assert entry and not any("alert" in line for line in entry)
    # the autocomplete: people who can see the project, by prefix, bounded
    for n in range(15):
        make_user(f"rob{n:02}", "viewer", [story.project])
    make_user("robber", "steward", ["elsewhere"])
    offered = client.get(f"{p}/people/mentions?q=ro").json()["people"]
    assert len(offered) == 10 and all(n.startswith("rob") for n in offered) and "robber" not in offered
    assert client.get(f"{p}/people/mentions?q=RI").json()["people"] == ["rita"]
    assert client.get(f"{p}/people/mentions?q=" + "x" * 5000).json()["people"] == []


def test_bad_input_comes_back_beside_the_form_with_the_text(story: Any, as_: Any) -> None:
    p = f"/p/{story.project}"
    client = as_("reviewer")
    long = "ä" * 10_001
    refused = client.post(f"{p}/decisions/{story.moved}/comments", {"body": long, "request_id": _rid()})
    html = refused.content.decode()
    assert refused.status_code == 400 and "at most 10,000 characters" in html and long in html
    blank = client.post(f"{p}/decisions/{story.moved}/comments", {"body": "  ", "request_id": _rid()})
    assert blank.status_code == 400 and "Write something first." in blank.content.decode()
    thread = _thread(story)
    hx = client.post(
        f"{p}/decisions/{story.moved}/comments",
        {"body": "x" * 10_001, "thread_id": thread.thread_id, "request_id": _rid()},
        headers={"HX-Request": "true"},
    )
    part = hx.content.decode()
    assert hx.status_code == 200 and part.lstrip().startswith(
        "<section"
    )  # htmx swaps 2xx only and "x" * 10_001 in part
    assert part.index("at most 10,000") > part.index(f'id="reply-{thread.thread_id}"')  # beside the reply form
    assert _discussion(story, "x").list_threads(story.moved).threads[0].comments == [thread]  # nothing written
    # a double submit acts once
    rid = _rid()
    for _ in range(2):
        assert (
            client.post(f"{p}/decisions/{story.moved}/comments", {"body": "once", "request_id": rid}).status_code == 302
        )
    assert (
        sum(x.body == "once" for t in _discussion(story, "x").list_threads(story.moved).threads for x in t.comments)
        == 1
    )


def test_a_long_thread_shows_its_latest_and_links_to_the_rest(story: Any, as_: Any) -> None:
    from core import limits

    shown = limits.THREAD_COMMENTS_SHOWN
    count = shown + 5
    rita = _discussion(story, "rita")
    first = _thread(story, text="m00x")
    for i in range(1, count):
        assert rita.post_comment(story.moved, f"m{i:02d}x", thread_id=first.thread_id).recorded
    page = f"/p/{story.project}/decisions/{story.moved}/"
    client = as_("viewer")
    html = client.get(page).content.decode()
    bodies = set(re.findall(r"m\d\dx", html))
    assert bodies == {"m00x"} | {f"m{i:02d}x" for i in range(count - shown, count)}  # the question and the latest
    link = f"?threads_from=0&amp;thread={first.thread_id}&amp;from=0#thread-{first.thread_id}"
    assert f'href="{link}">{count - shown - 1} earlier comments</a>' in html
    # the link opens the thread a page at a time, without JavaScript
    html = client.get(page + link.replace("&amp;", "&")).content.decode()
    assert set(re.findall(r"m\d\dx", html)) == {f"m{i:02d}x" for i in range(shown)}
    assert f"Comments 1–{shown} of {count}" in html and "earlier comments</a>" not in html
    later = f"?threads_from=0&amp;thread={first.thread_id}&amp;from={shown}#thread-{first.thread_id}"
    assert f'href="{later}">Later comments</a>' in html
    html = client.get(page + later.replace("&amp;", "&")).content.decode()
    assert set(re.findall(r"m\d\dx", html)) == {f"m{i:02d}x" for i in range(shown, count)}
    assert "Later comments" not in html and "Earlier comments</a>" in html
    # a thread id of nothing on the page is ignored
    other = client.get(page + f"?thread={uuid.uuid4()}&from=3")
    assert other.status_code == 200 and f"{count - shown - 1} earlier comments" in other.content.decode()
