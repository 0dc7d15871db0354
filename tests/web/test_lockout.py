"""Login throttling (django-axes): after REVIEWER_LOGIN_FAILURES failures for
one account or from one address, even the right password is refused with a
clear message until the cool-off passes or a reset."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from .conftest import PASSWORD, make_user

LOCKED = "Too many failed logins for this account or from this address"


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


def test_the_lockout_is_per_account_from_any_address(lena: object) -> None:
    for n in range(settings.AXES_FAILURE_LIMIT):
        _login(Client(), "lena", "wrong", address=f"10.0.1.{n}")
    client = Client()
    response = _login(client, "lena", PASSWORD, address="10.9.9.9")
    assert response.status_code == 429 and not _signed_in(client)
    make_user("omar", "viewer", ["acme"])
    other = Client()
    assert _login(other, "omar", PASSWORD, address="10.9.9.9").status_code == 302  # another account is not locked


def test_the_lockout_is_per_address_across_accounts(lena: object) -> None:
    for n in range(settings.AXES_FAILURE_LIMIT):
        _login(Client(), f"guess-{n}", "wrong", address="10.0.2.1")
    client = Client()
    response = _login(client, "lena", PASSWORD, address="10.0.2.1")
    assert response.status_code == 429 and LOCKED in response.content.decode() and not _signed_in(client)
    elsewhere = Client()
    assert _login(elsewhere, "lena", PASSWORD, address="10.0.2.2").status_code == 302


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


def test_behind_a_proxy_the_address_is_the_one_the_proxy_appended(lena: object, settings: object) -> None:
    settings.REVIEWER_TRUST_FORWARDED_FOR = True  # type: ignore[attr-defined]
    for n in range(settings.AXES_FAILURE_LIMIT):  # type: ignore[attr-defined]
        # the client invents a new first entry each time; the proxy's entry is the same
        Client().post(
            "/login/",
            {"username": f"guess-{n}", "password": "wrong"},
            REMOTE_ADDR="127.0.0.1",
            HTTP_X_FORWARDED_FOR=f"10.7.7.{n}, 203.0.113.5",
        )
    headers = {"REMOTE_ADDR": "127.0.0.1"}
    locked = Client().post(
        "/login/", {"username": "lena", "password": PASSWORD}, HTTP_X_FORWARDED_FOR="203.0.113.5", **headers
    )
    assert locked.status_code == 429
    other = Client().post(
        "/login/", {"username": "lena", "password": PASSWORD}, HTTP_X_FORWARDED_FOR="203.0.113.6", **headers
    )
    assert other.status_code == 302  # another client behind the same proxy is not locked out
