"""Single sign-on (reviewer/oidc.py) against a real OpenID provider.

The provider is django-oauth-toolkit's OIDC support in a second process on
loopback (tests/oidc_provider), with its own RS256 key made at start. The
browser (Debian's Chromium) goes through the whole authorization-code flow:
the dashboard's "Sign in with …" button, the provider's login form, the
callback, and lands signed in with the roles the groups claim maps to.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.test import Client

from core.history import ConversationHistory
from reviewer import oidc
from reviewer.models import OidcIdentity, ProjectGrant
from reviewer.settings import oidc_group_roles
from reviewer.store import get_store

from .conftest import Story, make_user
from .test_browser import browser, login, shot  # noqa: F401  (the module's Chromium)

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID, CLIENT_SECRET = "reviewer-dashboard", "a-client-secret-for-the-tests-only"
PEOPLE = [
    {
        "username": "alice",
        "password": "alice-at-the-provider",
        "email": "alice@acme.test",
        "groups": ["acme-reviewers", "lunch-club"],
    },
    {"username": "bob", "password": "bob-at-the-provider", "email": "bob@acme.test", "groups": ["contractors"]},
]


@pytest.fixture(scope="module")
def provider(live_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The provider's issuer address; the process is stopped after the module."""
    config = tmp_path_factory.mktemp("oidc") / "provider.json"
    config.write_text(
        json.dumps(
            {
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "redirect_uri": f"{live_server.url}/oidc/callback/",
                "people": PEOPLE,
            }
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.oidc_provider.serve", str(config)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()  # type: ignore[union-attr]
    try:
        line = lines.get(timeout=60)
    except queue.Empty:
        line = ""
    if not line.startswith("READY "):
        proc.kill()
        pytest.fail(f"the test OpenID provider did not start: {line!r} {proc.stderr.read()[-2000:]}", pytrace=False)  # type: ignore[union-attr]
    yield line.split()[1]
    proc.terminate()
    proc.wait(timeout=10)


def sso_config(issuer: str, group_roles: dict[str, dict[str, str]]) -> dict[str, Any]:
    return {
        "issuer": issuer,
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "authorization_endpoint": "",
        "token_endpoint": "",
        "userinfo_endpoint": "",
        "jwks_uri": "",
        "provider_name": "Acme SSO",
        "scopes": "openid email profile",
        "groups_claim": "groups",
        "sign_algo": "RS256",
        "group_roles": group_roles,
        "session_seconds": 3600,
    }


@pytest.fixture
def other_project(story: Story) -> Iterator[str]:
    """A second project in the store that no group maps to."""
    project = story.project + "-other"
    ConversationHistory(get_store(), project_id=project, agent_id="planner").create_task("t", goal="elsewhere")
    yield project
    get_store().drop_project(project)


def sign_in_with_sso(browser: Any, live_server: Any, username: str, *, width: int = 1280) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    button = page.locator("#sso")
    assert button.inner_text() == "Sign in with Acme SSO"
    with page.expect_navigation():
        button.click()
    assert page.url.startswith("http://127.0.0.1:") and "/accounts/login/" in page.url  # at the provider
    assert "Acme identity provider" in page.content()
    person = next(p for p in PEOPLE if p["username"] == username)
    page.fill("#id_username", username)
    page.fill("#id_password", person["password"])
    # the provider sends the browser back to the callback, which answers a redirect or the refusal page
    with page.expect_navigation(url=lambda u: u.startswith(live_server.url)) as back:
        page.click("#provider-submit")
    page.status = back.value.status  # type: ignore[attr-defined]
    return page


def test_the_sign_in_flow_in_the_browser_gives_the_mapped_roles_and_refuses_unmapped_people(
    transactional_db: None,
    live_server: Any,
    story: Story,
    other_project: str,
    provider: str,
    browser: Any,
    settings: Any,
) -> None:
    settings.REVIEWER_OIDC = sso_config(provider, {"acme-reviewers": {story.project: "reviewer"}})
    base = live_server.url

    # a password account of the same name is another person: single sign-on never takes it over
    local_alice = User.objects.create_user("alice", email="alice@acme.test", password="a-local-password-1")

    # alice is in acme-reviewers: she comes back signed in, a reviewer of the mapped project
    page = sign_in_with_sso(browser, live_server, "alice")
    assert page.url == f"{base}/p/{story.project}/"  # her one project
    alice = User.objects.get(oidc_identity__issuer=provider)
    assert alice.username == "alice-2" and alice.pk != local_alice.pk
    assert not alice.has_usable_password()
    assert not ProjectGrant.objects.filter(user=local_alice).exists()
    assert {(g.project_id, g.role) for g in ProjectGrant.objects.filter(user=alice)} == {(story.project, "reviewer")}
    assert "alice-2 · reviewer" in page.locator(".who").inner_text()
    page.goto(f"{base}/p/{story.project}/decisions/{story.moved}/")
    assert page.locator("form[action$='/reaffirm'] button[type=submit]").count() >= 1  # a reviewer may reaffirm
    assert page.goto(f"{base}/p/{story.project}/tokens/").status == 403  # not a steward
    assert page.goto(f"{base}/p/{other_project}/").status == 404  # not another project
    session = next(c for c in page.context.cookies() if c["name"] == "sessionid")
    assert 3500 < session["expires"] - time.time() <= 3600  # a bounded session: roles are re-read at next sign-in
    shot(page, "sso-signed-in")
    page.context.close()
    # a steward of the project sees her on the People page, marked as managed by single sign-on
    steward = Client()
    steward.force_login(User.objects.create_user("stan-sso", is_staff=True))
    people_page = steward.get(f"/p/{story.project}/people/").content.decode()
    assert "alice-2" in people_page and "(single sign-on)" in people_page

    # bob's groups map to nothing: a clear refusal, and no session
    page = sign_in_with_sso(browser, live_server, "bob")
    assert page.status == 403  # type: ignore[attr-defined]
    assert "No access to Reviewer" in page.content()
    assert "contractors" in page.locator("#sso-problem").inner_text()
    assert not User.objects.filter(username="bob").exists()
    assert not AccessAttempt.objects.exists()  # a refusal is not a failed login: no lockout of the address
    assert page.goto(f"{base}/p/{story.project}/").url.startswith(f"{base}/login/")  # not signed in
    page.context.close()

    # roles are written again at each sign-in: the group now gives a viewer role elsewhere
    settings.REVIEWER_OIDC = sso_config(provider, {"acme-reviewers": {other_project: "viewer"}})
    page = sign_in_with_sso(browser, live_server, "alice")
    assert {(g.project_id, g.role) for g in ProjectGrant.objects.filter(user=alice)} == {(other_project, "viewer")}
    assert OidcIdentity.objects.count() == 1 and User.objects.filter(username__startswith="alice").count() == 2
    assert page.goto(f"{base}/p/{story.project}/").status == 404
    assert page.goto(f"{base}/p/{other_project}/").status == 200
    page.context.close()

    # and a group that no longer maps to anything removes every grant and refuses
    settings.REVIEWER_OIDC = sso_config(provider, {"acme-stewards": {story.project: "steward"}})
    page = sign_in_with_sso(browser, live_server, "alice")
    assert page.status == 403  # type: ignore[attr-defined]
    assert "No access to Reviewer" in page.content()
    assert page.goto(f"{base}/p/{other_project}/").url.startswith(f"{base}/login/")  # signed out
    assert not ProjectGrant.objects.filter(user=alice).exists()
    page.context.close()


def test_screenshots_of_the_sso_pages(
    transactional_db: None,
    live_server: Any,
    story: Story,
    provider: str,
    browser: Any,
    settings: Any,
) -> None:
    settings.REVIEWER_OIDC = sso_config(provider, {"acme-reviewers": {story.project: "reviewer"}})
    for width in (1440, 390):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.goto(f"{live_server.url}/login/")
        shot(page, f"login-sso-{width}")
        context.close()
        page = sign_in_with_sso(browser, live_server, "bob", width=width)
        shot(page, f"sso-refused-{width}")
        page.context.close()
    sign_in_with_sso(browser, live_server, "alice").context.close()
    make_user("stan-shot", None, [], staff=True)
    page = login(browser, live_server, "stan-shot")
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/p/{story.project}/people/")
        assert page.locator(".sso-managed").count() == 1
        shot(page, f"people-sso-{width}")
    page.context.close()


def test_a_callback_with_a_forged_state_is_refused_cleanly(db: None, settings: Any) -> None:
    settings.REVIEWER_OIDC = sso_config("http://127.0.0.1:9/o", {"g": {"p": "viewer"}})
    client = Client()
    session = client.session
    session["oidc_states"] = {"the-real-state": {"nonce": "n", "code_verifier": "v" * 64}}
    session.save()
    response = client.get("/oidc/callback/", {"code": "c", "state": "forged"})
    assert response.status_code == 400
    assert "Sign-in did not complete" in response.content.decode()
    assert "Start again from the login page" in response.content.decode()  # what to do, not only that it failed
    response = client.get("/oidc/callback/", {"error": "access_denied", "state": "x"})
    assert response.status_code == 403 and "access_denied" in response.content.decode()
    assert "Sign-in was not allowed" in response.content.decode()
    assert client.get("/oidc/callback/", {"error": "e" * 5000, "state": "x"}).content.count(b"e" * 101) == 0
    # someone signed in whose session then gets a callback that cannot be checked is signed out
    client.force_login(make_user("pat", "viewer", ["p"]))
    assert client.get("/p/p/").status_code == 200
    session = client.session
    session["oidc_states"] = {"the-real-state": {"nonce": "n", "code_verifier": "v" * 64}}
    session.save()
    assert client.get("/oidc/callback/", {"code": "c", "state": "forged"}).status_code == 400
    assert client.get("/p/p/").status_code == 302  # to the login page
    response = client.get("/oidc/callback/", {"error": "<script>alert(1)</script>", "state": "x"})
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.content.decode()
    assert "<script>alert(1)" not in response.content.decode()


def test_an_unreachable_provider_gets_a_clear_page(db: None, settings: Any) -> None:
    settings.REVIEWER_OIDC = sso_config("http://127.0.0.1:9/o", {"g": {"p": "viewer"}})
    oidc._discovered.clear()
    response = Client().get("/oidc/login/")
    assert response.status_code == 503
    assert "cannot be reached" in response.content.decode()


def test_single_sign_on_is_off_unless_configured(db: None, settings: Any) -> None:
    settings.REVIEWER_OIDC = None
    client = Client()
    page = client.get("/login/").content.decode()
    assert "Sign in with" not in page
    assert client.get("/oidc/login/").status_code == 404
    assert client.get("/oidc/callback/", {"code": "c", "state": "s"}).status_code == 404


def test_the_group_mapping_is_read_strictly() -> None:
    assert oidc_group_roles("acme-reviewers=acme:reviewer, acme-stewards=acme:steward,ops=team:x:viewer") == {
        "acme-reviewers": {"acme": "reviewer"},
        "acme-stewards": {"acme": "steward"},
        "ops": {"team:x": "viewer"},
    }
    assert oidc_group_roles("all=a:viewer,all=b:steward") == {"all": {"a": "viewer", "b": "steward"}}
    for bad in ("acme", "acme=acme", "acme=acme:admin", "=acme:viewer", "g=:viewer", "g=p:viewer,g=p:steward"):
        with pytest.raises(ImproperlyConfigured):
            oidc_group_roles(bad)
    # several groups naming one project: the highest role
    mapping = oidc_group_roles("a=p:viewer,b=p:steward,c=p:reviewer,d=q:viewer")
    assert oidc.roles_from_groups(["a", "b", "c", "zzz"], mapping) == {"p": "steward"}
    assert oidc.roles_from_groups(["zzz"], mapping) == {}
    assert oidc.groups_of({"groups": "a"}, "groups") == ["a"]
    assert oidc.groups_of({"groups": ["a", 3, None]}, "groups") == ["a"]
    assert oidc.groups_of({}, "groups") == []


def test_an_id_token_from_another_issuer_or_for_another_client_is_refused(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.REVIEWER_OIDC = sso_config("https://sso.acme.test/o", {"g": {"p": "viewer"}})
    good = {"iss": "https://sso.acme.test/o", "aud": CLIENT_ID, "sub": "42", "nonce": "n"}
    backend = oidc.OidcBackend()
    for payload, accepted in [
        (good, True),
        ({**good, "aud": [CLIENT_ID, "other"]}, True),
        ({**good, "iss": "https://evil.test/o"}, False),
        ({**good, "aud": "another-client"}, False),
        ({**good, "sub": ""}, False),
    ]:
        monkeypatch.setattr(oidc.OIDCAuthenticationBackend, "verify_token", lambda self, token, p=payload, **kw: p)
        if accepted:
            assert backend.verify_token("t", nonce="n") == payload
        else:
            with pytest.raises(SuspiciousOperation):
                backend.verify_token("t", nonce="n")


def test_the_environment_turns_single_sign_on_on_only_when_complete(monkeypatch: pytest.MonkeyPatch) -> None:
    from reviewer.settings import oidc_settings

    for name in [n for n in os.environ if n.startswith("REVIEWER_OIDC_")]:
        monkeypatch.delenv(name)
    assert oidc_settings() is None  # off by default
    monkeypatch.setenv("REVIEWER_OIDC_CLIENT_ID", "reviewer")
    with pytest.raises(ImproperlyConfigured, match="REVIEWER_OIDC_ISSUER"):
        oidc_settings()
    monkeypatch.setenv("REVIEWER_OIDC_ISSUER", "https://sso.acme.test/o/")
    with pytest.raises(ImproperlyConfigured, match="CLIENT_SECRET"):
        oidc_settings()
    monkeypatch.setenv("REVIEWER_OIDC_CLIENT_SECRET", "s")
    with pytest.raises(ImproperlyConfigured, match="nobody could sign in"):
        oidc_settings()
    monkeypatch.setenv("REVIEWER_OIDC_GROUP_ROLES", "acme-reviewers=acme:reviewer")
    monkeypatch.setenv("REVIEWER_OIDC_TOKEN_ENDPOINT", "https://sso.acme.test/other/token")
    cfg = oidc_settings()
    assert cfg is not None
    assert cfg["issuer"] == "https://sso.acme.test/o" and cfg["token_endpoint"] == "https://sso.acme.test/other/token"
    assert cfg["group_roles"] == {"acme-reviewers": {"acme": "reviewer"}} and cfg["session_seconds"] == 8 * 3600
    monkeypatch.setenv("REVIEWER_OIDC_SESSION_SECONDS", "soon")
    with pytest.raises(ImproperlyConfigured, match="SESSION_SECONDS"):
        oidc_settings()


def test_the_discovery_document_is_read_once_an_hour_and_must_name_its_issuer(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every sign-in reads the provider's endpoints: from one read of its
    discovery document per hour (a provider that answers slowly or is briefly
    away does not stop each sign-in), and only if it names the configured issuer."""
    import http.server

    hits: list[str] = []
    named = {"issuer": ""}

    class Discovery(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = json.dumps({"issuer": named["issuer"], "authorization_endpoint": "https://sso.test/auth"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Discovery)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        issuer = f"http://127.0.0.1:{server.server_port}/o"
        settings.REVIEWER_OIDC = sso_config(issuer, {"g": {"p": "viewer"}})
        oidc._discovered.clear()
        named["issuer"] = "https://evil.test/o"
        with pytest.raises(oidc.ProviderUnavailable, match="another issuer"):
            oidc.endpoint("authorization_endpoint")
        named["issuer"] = issuer + "/"
        assert [oidc.endpoint("authorization_endpoint") for _ in range(3)] == ["https://sso.test/auth"] * 3
        assert hits == ["/o/.well-known/openid-configuration"] * 2  # the refused read, then one for the three
        monkeypatch.setattr(oidc, "_DISCOVERY_TTL", 0.0)  # an hour later
        oidc.endpoint("authorization_endpoint")
        assert len(hits) == 3
    finally:
        server.shutdown()
        oidc._discovered.clear()


def test_a_code_the_provider_refuses_is_the_clean_400_page(db: None, settings: Any, provider: str) -> None:
    """A code that expired or was used twice: the provider answers 400, and
    the person gets the page that says to start again (not a 503, not a 500)."""
    settings.REVIEWER_OIDC = sso_config(provider, {"acme-reviewers": {"p": "viewer"}})
    oidc._discovered.clear()
    client = Client()
    session = client.session
    session["oidc_states"] = {"s1": {"nonce": "n", "code_verifier": "v" * 64, "added_on": time.time()}}
    session.save()
    response = client.get("/oidc/callback/", {"code": "not-a-code-it-gave", "state": "s1"})
    assert response.status_code == 400
    assert "Start again from the login page" in response.content.decode()
