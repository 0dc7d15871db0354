"""Single sign-on with OpenID Connect (mozilla-django-oidc), beside passwords.

Off unless ``REVIEWER_OIDC_CLIENT_ID`` is set (settings.REVIEWER_OIDC). The
authorization-code flow with PKCE and a nonce: the login page's "Sign in
with …" sends the person to the provider; the provider sends them back to
``/oidc/callback/`` with a code that the server exchanges for an ID token
(RS256, checked against the provider's keys, issuer and audience) and the
userinfo claims.

A person is one (issuer, subject) pair (:class:`reviewer.models.OidcIdentity`),
never matched to a password account by name or email. Their project roles
come from the groups claim through ``REVIEWER_OIDC_GROUP_ROLES`` and are
written again at each sign-in: grants the claim no longer gives are removed.
Someone in no mapped group is refused with a page that says so, and signs in
to nothing (their old grants, if any, are removed too). A single sign-on
session lasts ``REVIEWER_OIDC_SESSION_SECONDS`` (8 hours by default), so a
change at the provider reaches a signed-in person within that time.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any

import requests
from django.conf import settings
from django.contrib import auth
from django.contrib.auth import views as auth_views
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from . import access
from .access import ROLES

log = logging.getLogger(__name__)

_RANK = {role: n for n, role in enumerate(ROLES)}
_DISCOVERY_TTL = 3600.0
_discovered: dict[str, tuple[float, dict[str, Any]]] = {}
_discovery_lock = threading.Lock()


class ProviderUnavailable(Exception):
    """The provider's discovery document could not be read or does not fit."""


class Refused(Exception):
    """The provider vouched for this person, but none of their groups is mapped
    to a role. Not a failed login: it goes past django.contrib.auth.authenticate
    (whose failure signal django-axes counts towards a lockout of the address)
    to the callback view, which says so."""

    def __init__(self, name: str, groups: list[str]) -> None:
        super().__init__(f"{name}: no group of {groups!r} is mapped to a project role")
        self.name, self.groups = name, groups


def config() -> dict[str, Any] | None:
    return getattr(settings, "REVIEWER_OIDC", None)


def provider_name() -> str | None:
    """The name on the login page's button, or None when single sign-on is off."""
    cfg = config()
    return cfg["provider_name"] if cfg else None


def _discovery(issuer: str) -> dict[str, Any]:
    with _discovery_lock:
        cached = _discovered.get(issuer)
        if cached and time.monotonic() - cached[0] < _DISCOVERY_TTL:
            return cached[1]
    url = issuer + "/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=10)
        response.raise_for_status()
        doc = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"the discovery document at {url} could not be read: {exc}") from exc
    if not isinstance(doc, dict) or str(doc.get("issuer", "")).rstrip("/") != issuer:
        raise ProviderUnavailable(f"the discovery document at {url} names another issuer")
    with _discovery_lock:
        _discovered[issuer] = (time.monotonic(), doc)
    return doc


def endpoint(name: str) -> str:
    """One of the provider's endpoints: as configured, else from discovery."""
    cfg = config()
    assert cfg is not None
    if cfg.get(name):
        return cfg[name]
    value = _discovery(cfg["issuer"]).get(name)
    if not value:
        raise ProviderUnavailable(f"the provider's discovery document has no {name}")
    return value


_ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
_FROM_CONFIG = {
    "OIDC_RP_CLIENT_ID": "client_id",
    "OIDC_RP_CLIENT_SECRET": "client_secret",
    "OIDC_RP_SIGN_ALGO": "sign_algo",
    "OIDC_RP_SCOPES": "scopes",
}
_FIXED = {"OIDC_USE_PKCE": True, "OIDC_USE_NONCE": True, "OIDC_TIMEOUT": 10, "OIDC_CREATE_USER": True}


def setting(attr: str, *default: Any) -> Any:
    """mozilla-django-oidc's settings, read from REVIEWER_OIDC."""
    cfg = config()
    if cfg is not None:
        if attr in _ENDPOINTS:
            return endpoint(_ENDPOINTS[attr])
        if attr in _FROM_CONFIG:
            return cfg[_FROM_CONFIG[attr]]
    if attr in _FIXED:
        return _FIXED[attr]
    return import_from_settings(attr, *default)


def roles_from_groups(groups: list[str], group_roles: dict[str, dict[str, str]]) -> dict[str, str]:
    """{project: role} the groups give; the highest role where several groups name one project."""
    roles: dict[str, str] = {}
    for group in groups:
        for project, role in group_roles.get(group, {}).items():
            if project not in roles or _RANK[role] > _RANK[roles[project]]:
                roles[project] = role
    return roles


def groups_of(claims: dict[str, Any], claim: str) -> list[str]:
    value = claims.get(claim)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [g for g in value if isinstance(g, str)]
    return []


def sync_grants(user: Any, roles: dict[str, str]) -> None:
    """The user's grants become exactly ``roles``."""
    from .models import ProjectGrant

    for project, role in roles.items():
        ProjectGrant.objects.update_or_create(user=user, project_id=project, defaults={"role": role})
    ProjectGrant.objects.filter(user=user).exclude(project_id__in=list(roles)).delete()
    access.forget(user)


_USERNAME_CHARS = re.compile(r"[^\w.@+-]")


class OidcBackend(OIDCAuthenticationBackend):
    """Signs in the person the provider vouches for, with the roles their groups give."""

    get_settings = staticmethod(setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # mozilla-django-oidc reads every setting here; Django builds each backend
        # for every password login too, when single sign-on may be off.
        from django.contrib.auth import get_user_model

        self.UserModel = get_user_model()

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        # Only the callback view passes a nonce; a password form never reaches here.
        if config() is None or request is None or "nonce" not in kwargs:
            return None
        super().__init__()
        return super().authenticate(request, **kwargs)

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        payload = super().verify_token(token, **kwargs)
        if "nonce" in kwargs:  # the ID token (a signed userinfo answer has no nonce)
            cfg = config()
            assert cfg is not None
            if cfg["issuer"] and str(payload.get("iss", "")).rstrip("/") != cfg["issuer"]:
                raise SuspiciousOperation("the ID token's issuer is not the configured one")
            audience = payload.get("aud")
            audiences = audience if isinstance(audience, list) else [audience]
            if cfg["client_id"] not in audiences:
                raise SuspiciousOperation("the ID token was not issued to this client")
            if not payload.get("sub") or not payload.get("iss"):
                raise SuspiciousOperation("the ID token has no subject or issuer")
        return payload

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        from .models import OidcIdentity

        cfg = config()
        assert cfg is not None
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload["sub"]:
            raise SuspiciousOperation("the userinfo answer is about another subject than the ID token")
        claims = {**payload, **userinfo}
        issuer, subject = str(payload["iss"]), str(payload["sub"])
        groups = groups_of(claims, cfg["groups_claim"])
        roles = roles_from_groups(groups, cfg["group_roles"])
        name = str(claims.get("preferred_username") or claims.get("email") or subject)
        if not roles:
            identity = OidcIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
            if identity is not None:
                sync_grants(identity.user, {})  # what their groups gave before is gone
            log.warning(
                "single sign-on refused %s (%s at %s): no group of %r is mapped to a project role",
                name,
                subject,
                issuer,
                groups,
            )
            raise Refused(name, groups)
        with transaction.atomic():
            identity = OidcIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
            if identity is None:
                user = self.UserModel(username=self._free_username(name), email=str(claims.get("email") or ""))
                user.set_unusable_password()
                user.save()
                identity = OidcIdentity.objects.create(user=user, issuer=issuer, subject=subject)
            user = identity.user
            email = str(claims.get("email") or "")
            if email and user.email != email:
                user.email = email
                user.save(update_fields=["email"])
            sync_grants(user, roles)
        log.info("single sign-on: %s (%s at %s) with %s", user.username, subject, issuer, roles)
        return user

    def _free_username(self, wanted: str) -> str:
        base = _USERNAME_CHARS.sub("-", wanted)[:140] or "sso-user"
        candidate, n = base, 1
        while self.UserModel.objects.filter(username__iexact=candidate).exists():
            n += 1
            candidate = f"{base}-{n}"
        return candidate


def _problem(request: HttpRequest, status: int, title: str, reason: str, **extra: Any) -> HttpResponse:
    context = {"title": title, "reason": reason, "provider": provider_name(), **extra}
    return render(request, "reviewer/oidc_problem.html", context, status=status)


def _unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    log.error("single sign-on: the provider could not be reached: %s", exc)
    return _problem(
        request,
        503,
        "The sign-in service cannot be reached",
        "Reviewer could not talk to the identity provider just now. Try again in a moment, "
        "or sign in with a password if you have one.",
    )


class OidcStart(OIDCAuthenticationRequestView):
    """``/oidc/login/``: off to the provider (404 when single sign-on is off)."""

    get_settings = staticmethod(setting)

    def __init__(self, **kwargs: Any) -> None:
        super(OIDCAuthenticationRequestView, self).__init__(**kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        if config() is None:
            raise Http404("single sign-on is not configured")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except ProviderUnavailable as exc:
            return _unavailable(request, exc)
        self.OIDC_RP_CLIENT_ID = setting("OIDC_RP_CLIENT_ID")
        return super().get(request)


class OidcCallback(OIDCAuthenticationCallbackView):
    """``/oidc/callback/``: the provider sends the person back here."""

    get_settings = staticmethod(setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if config() is None:
            raise Http404("single sign-on is not configured")
        try:
            return super().get(request)
        except Refused as exc:
            if request.user.is_authenticated:
                auth.logout(request)
            return _problem(
                request,
                403,
                "No access to Reviewer",
                "none of your groups at the identity provider gives a role in a Reviewer project.",
                refused={"name": exc.name, "groups": exc.groups},
            )
        except SuspiciousOperation as exc:
            log.warning("single sign-on: a callback was refused: %s", exc)
            return self._failed(400)
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 502
            if 400 <= status < 500:  # the provider refused the code (expired, used twice, wrong client)
                log.warning("single sign-on: the provider refused a callback's code: %s", exc)
                return self._failed(400)
            return _unavailable(request, exc)
        except (requests.RequestException, ProviderUnavailable) as exc:
            return _unavailable(request, exc)

    def login_success(self) -> HttpResponse:
        response = super().login_success()
        # roles are read at sign-in: a bounded session re-reads them within this time
        self.request.session.set_expiry(config()["session_seconds"])  # type: ignore[index]
        return response

    def _failed(self, status: int) -> HttpResponse:
        if self.request.user.is_authenticated:
            auth.logout(self.request)
        return _problem(
            self.request,
            status,
            "Sign-in did not complete",
            "The answer from the identity provider could not be checked (it may have expired, or been "
            "opened twice). Start again from the login page.",
        )

    def login_failure(self) -> HttpResponse:
        error = self.request.GET.get("error")
        if error:
            return _problem(
                self.request,
                403,
                "Sign-in was not allowed",
                "The identity provider did not let this sign-in through.",
                provider_error=error[:100],
            )
        return self._failed(400)


class LoginView(auth_views.LoginView):
    """The password form, and the single sign-on button when it is configured."""

    template_name = "reviewer/login.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["sso_name"] = provider_name()
        return context
