"""Login throttling (django-axes): after REVIEWER_LOGIN_FAILURES failures for
one account from one address, even the right password is refused from that
address with a clear message until the cool-off passes or a reset; the same
account from another address, and other accounts from the same address, are
not (an outsider can neither aim a lockout at an account nor lock out everyone
behind one proxy)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client, RequestFactory
from django.utils import timezone

from .conftest import PASSWORD, make_user

LOCKED = "Too many failed logins for this account from this address"


def _login(client: Client, username: str, password: str, address: str = "10.0.0.1") -> object:
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.fixture
def lena(db: None) -> object:
    return make_user("lena", "viewer", ["acme"])


def test_the_failure_limit_and_cool_off_come_from_the_environment() -> None:
    assert settings.AXES_FAILURE_LIMIT == 5  # REVIEWER_LOGIN_FAILURES's default
    assert timedelta(minutes=15) == settings.AXES_COOLOFF_TIME  # REVIEWER_LOGIN_COOLOFF's default


def test_after_n_failures_the_right_password_is_refused_until_the_cool_off_passes(
    lena: object, caplog: pytest.LogCaptureFixture
) -> None:
    from axes.models import AccessAttempt

    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        response = _login(client, "lena", f"wrong-{n}")
        assert response.status_code == 200 and LOCKED not in response.content.decode()
    assert 'Repeated login failure by {username: "lena", ip_address: "10.0.0.1"' in caplog.text  # failures logged
    response = _login(client, "lena", "wrong-last")
    assert response.status_code == 429 and LOCKED in response.content.decode()
    refused = _login(client, "lena", PASSWORD)
    body = refused.content.decode()
    assert refused.status_code == 429 and LOCKED in body and "15 minutes" in body
    assert 'name="username"' in body  # still the login page, with its form
    assert not _signed_in(client)
    # the cool-off passes
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=5))
    response = _login(client, "lena", PASSWORD)
    assert response.status_code == 302 and _signed_in(client)


def test_an_outsiders_failures_do_not_lock_the_owner_out_from_another_address(lena: object) -> None:
    for n in range(settings.AXES_FAILURE_LIMIT + 3):  # and on: each try during the pause restarts it
        _login(Client(), "lena", f"wrong-{n}", address="203.0.113.66")
    assert _login(Client(), "lena", PASSWORD, address="203.0.113.66").status_code == 429  # the outsider is locked
    owner = Client()
    assert _login(owner, "lena", PASSWORD, address="10.9.9.9").status_code == 302 and _signed_in(owner)


def test_failures_on_one_account_do_not_lock_another_from_the_same_address(lena: object) -> None:
    make_user("omar", "viewer", ["acme"])
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _login(Client(), "lena", "wrong", address="10.0.2.1")
    assert _login(Client(), "lena", PASSWORD, address="10.0.2.1").status_code == 429
    colleague = Client()  # behind the same proxy or NAT
    assert _login(colleague, "omar", PASSWORD, address="10.0.2.1").status_code == 302 and _signed_in(colleague)


def test_guesses_at_many_accounts_from_one_address_lock_out_no_other_account(lena: object) -> None:
    for n in range(3 * settings.AXES_FAILURE_LIMIT):
        _login(Client(), f"guess-{n % 3}", "wrong", address="10.0.2.1")
    client = Client()
    assert _login(client, "lena", PASSWORD, address="10.0.2.1").status_code == 302 and _signed_in(client)


def test_a_reset_lifts_the_lockout(lena: object) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _login(Client(), "lena", "wrong")
    assert _login(Client(), "lena", PASSWORD).status_code == 429
    call_command("axes_reset_username", "lena")
    call_command("axes_reset_ip", "10.0.0.1")
    client = Client()
    assert _login(client, "lena", PASSWORD).status_code == 302 and _signed_in(client)


def test_a_success_clears_earlier_failures(lena: object) -> None:
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _login(client, "lena", "wrong")
    assert _login(client, "lena", PASSWORD).status_code == 302
    client.post("/logout/")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _login(client, "lena", "wrong").status_code == 200
    assert _login(client, "lena", PASSWORD).status_code == 302


def _behind_proxy(username: str, password: str, **headers: str) -> object:
    """A login through a proxy on 127.0.0.1 that sets the given headers."""
    return Client().post("/login/", {"username": username, "password": password}, REMOTE_ADDR="127.0.0.1", **headers)


def test_behind_a_proxy_without_a_named_header_every_login_counts_from_the_proxy(
    lena: object, settings: object
) -> None:
    settings.REVIEWER_CLIENT_IP_HEADER = ""  # type: ignore[attr-defined]  # the default
    for n in range(settings.AXES_FAILURE_LIMIT):  # type: ignore[attr-defined]
        _behind_proxy("lena", "wrong", HTTP_X_REAL_IP=f"198.51.100.{n}", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}")
    # the headers are not read: lena is locked from the proxy's address (and only lena)
    assert _behind_proxy("lena", PASSWORD, HTTP_X_REAL_IP="198.51.100.99").status_code == 429
    make_user("omar", "viewer", ["acme"])
    assert _behind_proxy("omar", PASSWORD).status_code == 302


def test_behind_a_proxy_the_named_header_gives_the_address(lena: object, settings: object) -> None:
    settings.REVIEWER_CLIENT_IP_HEADER = "X-Real-IP"  # type: ignore[attr-defined]
    for _ in range(settings.AXES_FAILURE_LIMIT):  # type: ignore[attr-defined]
        # an X-Forwarded-For the client invented is not the named header: not read
        _behind_proxy("lena", "wrong", HTTP_X_REAL_IP="203.0.113.5", HTTP_X_FORWARDED_FOR="10.1.1.1")
    assert _behind_proxy("lena", PASSWORD, HTTP_X_REAL_IP="203.0.113.5").status_code == 429
    assert _behind_proxy("lena", PASSWORD, HTTP_X_REAL_IP="203.0.113.6").status_code == 302  # another client
    assert _behind_proxy("lena", PASSWORD).status_code == 302  # no header: the proxy's own address, not locked


def test_of_a_forwarded_for_list_only_the_entry_the_proxy_appended_counts(lena: object, settings: object) -> None:
    settings.REVIEWER_CLIENT_IP_HEADER = "X-Forwarded-For"  # type: ignore[attr-defined]
    for n in range(settings.AXES_FAILURE_LIMIT):  # type: ignore[attr-defined]
        # the client invents a new first entry each time; the proxy's entry is the same
        _behind_proxy("lena", "wrong", HTTP_X_FORWARDED_FOR=f"10.7.7.{n}, 203.0.113.5")
    assert _behind_proxy("lena", PASSWORD, HTTP_X_FORWARDED_FOR="203.0.113.5").status_code == 429
    assert _behind_proxy("lena", PASSWORD, HTTP_X_FORWARDED_FOR="203.0.113.6").status_code == 302


def test_a_named_header_that_holds_no_address_counts_from_the_connection(lena: object, settings: object) -> None:
    from reviewer.views.auth import client_address

    settings.REVIEWER_CLIENT_IP_HEADER = "X-Real-IP"  # type: ignore[attr-defined]
    request = RequestFactory().post("/login/", REMOTE_ADDR="127.0.0.1", HTTP_X_REAL_IP="'; DROP TABLE x; --")
    assert client_address(request) == "127.0.0.1"
    request = RequestFactory().post("/login/", REMOTE_ADDR="127.0.0.1", HTTP_X_REAL_IP="[2001:db8::1]")
    assert client_address(request) == "2001:db8::1"
