"""manage.py up: the newcomer's set-up command."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import override_settings

from reviewer.store import reset_store


@pytest.mark.django_db
def test_up_prepares_a_local_dashboard_with_one_demo_login(settings) -> None:  # type: ignore[no-untyped-def]
    reset_store()
    with override_settings(DEBUG=True):
        first, second = StringIO(), StringIO()
        call_command("up", "--no-run", stdout=first)
        call_command("up", "--no-run", stdout=second)
    text = first.getvalue()
    assert "Reviewer is at http://127.0.0.1:8000/" in text
    login = [line for line in text.splitlines() if line.startswith("Demo login: demo / ")]
    assert len(login) == 1
    password = login[0].rsplit(" ", 1)[1]
    assert User.objects.get(username="demo").check_password(password)
    assert login[0] in second.getvalue()  # the same login, printed again, not a new user
    assert User.objects.count() == 1


@pytest.mark.django_db
def test_up_creates_no_demo_login_outside_local_debug_use() -> None:
    reset_store()
    out = StringIO()
    call_command("up", "--no-run", stdout=out)  # DEBUG is off in the test settings
    assert "Demo login" not in out.getvalue()
    assert not User.objects.exists()
