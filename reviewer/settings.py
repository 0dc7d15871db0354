"""Reviewer's settings, read from the environment.

Every setting is listed, with its default, in the README's configuration
reference. Production is the default: DEBUG is off and a secret key must be
given; the README's run command turns DEBUG on for local use.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from core.stores.embedded import default_data_dir
from reviewer.env import env_bool, env_int, env_list, env_positive_int

BASE_DIR = Path(__file__).resolve().parent.parent


DEBUG = env_bool("DJANGO_DEBUG", False)

DATA_DIR = default_data_dir()  # $REVIEWER_DATA_DIR or <checkout>/var, as the core's default

REVIEWER_STORE_URL = os.environ.get("REVIEWER_STORE_URL") or f"falkordb+embedded://{DATA_DIR / 'graph'}"

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not set. Set it to a long random value, or set DJANGO_DEBUG=1 for local use."
        )
    SECRET_KEY = "django-insecure-local-development-only-not-for-production-use"

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials.apps.SimpleAppConfig",  # {% partialdef %}; the loader is set in TEMPLATES
    "ninja",  # the agents' JSON API (reviewer/api)
    "axes",  # login throttling and lockout
    "reviewer",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files under any server, hashed names cached for a year
    "reviewer.middleware.ContentSecurityPolicyMiddleware",
    "reviewer.middleware.AppNotFoundMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "reviewer.middleware.NoStoreForSignedInMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "reviewer.middleware.StoreUnavailableMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks
]

ROOT_URLCONF = "reviewer.urls"
WSGI_APPLICATION = "reviewer.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "reviewer.context.project_page",
            ],
            # "page.html#name" renders one {% partialdef %} of a page (the htmx fragment)
            "loaders": [
                (
                    "template_partials.loader.Loader",
                    [
                        (
                            "django.template.loaders.cached.Loader",
                            [
                                "django.template.loaders.filesystem.Loader",
                                "django.template.loaders.app_directories.Loader",
                            ],
                        ),
                    ],
                ),
            ],
            "builtins": ["template_partials.templatetags.partials"],
        },
    }
]
# Django's form renderer with the common widgets (inputs, text areas) written out in Python: same markup
FORM_RENDERER = "reviewer.renderers.Renderer"

# Django's own data only (users, groups, sessions, API tokens). Graph data lives in the store.
# DATABASE_URL (postgres://user:password@host:port/name) for production; a SQLite file otherwise.
DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
if DATABASE_URL:
    import dj_database_url

    try:
        _database = dj_database_url.parse(
            DATABASE_URL,
            conn_max_age=env_int("REVIEWER_DB_CONN_MAX_AGE", 60, minimum=0),
            conn_health_checks=True,
        )
    except ValueError as exc:  # an unknown scheme, a bad port
        raise ImproperlyConfigured(f"DATABASE_URL is not a database url: {exc}") from exc
    DATABASES = {"default": _database}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("REVIEWER_AUTH_DB") or str(DATA_DIR / "auth.sqlite3"),
            "OPTIONS": {"timeout": 20},
            # kept open by each worker thread, as DATABASE_URL's is: opening SQLite (and
            # Django's functions on it) for every page's session read cost ~0.5 ms of CPU
            "CONN_MAX_AGE": env_int("REVIEWER_DB_CONN_MAX_AGE", 60, minimum=0),
            "CONN_HEALTH_CHECKS": True,
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login throttling (django-axes): after REVIEWER_LOGIN_FAILURES failed logins
# for one account from one address, that account is refused from that address
# for REVIEWER_LOGIN_COOLOFF minutes (the login page says so; a further failure
# during the cool-off starts it again). Counting the pair, never the account
# alone or the address alone, means nobody can lock an account from elsewhere
# nor lock out every account behind one proxy. Failures are logged (logger
# "axes") and kept in the auth database; `manage.py axes_reset` lifts every
# lockout. The address is REMOTE_ADDR, or, when REVIEWER_CLIENT_IP_HEADER names
# a header the proxy sets, that header's last entry (the proxy's own).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",  # passwords
    "reviewer.oidc.OidcBackend",  # single sign-on; answers nothing unless REVIEWER_OIDC is set
]
AXES_FAILURE_LIMIT = env_positive_int("REVIEWER_LOGIN_FAILURES", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_positive_int("REVIEWER_LOGIN_COOLOFF", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # the account and the address together
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "reviewer.views.auth.locked_out"
AXES_ENABLE_ADMIN = False
AXES_VERBOSE = False  # no banner on every manage.py command; failures are still logged
AXES_CLIENT_IP_CALLABLE = "reviewer.views.auth.client_address"
REVIEWER_CLIENT_IP_HEADER = os.environ.get("REVIEWER_CLIENT_IP_HEADER", "").strip()
if REVIEWER_CLIENT_IP_HEADER and not re.fullmatch(r"[A-Za-z0-9-]+", REVIEWER_CLIENT_IP_HEADER):
    raise ImproperlyConfigured(
        f"REVIEWER_CLIENT_IP_HEADER must be a header name such as X-Real-IP, not {REVIEWER_CLIENT_IP_HEADER!r}"
    )
AXES_SENSITIVE_PARAMETERS: list[str] = []  # the log names the account and address (never the password)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT") or DATA_DIR / "static")
# collectstatic writes each file under a name with its content's hash (and a gzip
# copy); WhiteNoise serves those with a year's Cache-Control. `manage.py serve` collects.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# Django's cache holds the API's per-token request counts (reviewer/api/limits.py): a
# directory every worker process of the host shares, counted under a file lock.
CACHES = {
    "default": {
        "BACKEND": "reviewer.cache.SharedFileCache",
        "LOCATION": os.environ.get("REVIEWER_CACHE_DIR") or str(DATA_DIR / "cache"),
    }
}

# Security: safe by default, relaxed only when DEBUG is on.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", True)
    if env_bool("DJANGO_BEHIND_PROXY", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# The agents' JSON API (reviewer/api): requests per token per minute, and the
# largest request body in bytes (Django's own cap, DATA_UPLOAD_MAX_MEMORY_SIZE, stays above it).
REVIEWER_API_RATE = env_positive_int("REVIEWER_API_RATE", 12000)
REVIEWER_API_MAX_BODY = env_positive_int("REVIEWER_API_MAX_BODY", 2 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = max(REVIEWER_API_MAX_BODY + 1024, 2621440)

# E-mail (Django's own settings, read from the environment): the inbox's
# optional e-mail of mentions and assignments (reviewer.notice_mail) goes out
# through this SMTP server. Without EMAIL_HOST no e-mail is sent and no
# sender runs.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "").strip()
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = 20
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "reviewer@localhost")
REVIEWER_NOTICE_EMAIL = bool(EMAIL_HOST)
# whether a person who has not chosen gets the e-mail (each person turns it on or off for themselves)
REVIEWER_NOTICE_EMAIL_DEFAULT = env_bool("REVIEWER_NOTICE_EMAIL_DEFAULT", False)
# how long a notice waits before it is e-mailed (read in the app meanwhile: never sent), and how
# often a serving process looks for what is due
REVIEWER_NOTICE_HOLD_S = env_int("REVIEWER_NOTICE_HOLD_S", 120, minimum=0)
REVIEWER_NOTICE_EVERY_S = env_int("REVIEWER_NOTICE_EVERY_S", 30)
# where an e-mail's links point: the dashboard's address as people open it
REVIEWER_BASE_URL = os.environ.get("REVIEWER_BASE_URL", "http://localhost:8000").strip().rstrip("/")


def env_seconds(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 60:
        raise ImproperlyConfigured(f"{name} must be a whole number of seconds, at least 60, not {raw!r}")
    return int(raw)


def oidc_group_roles(raw: str) -> dict[str, dict[str, str]]:
    """``group=project:role,...`` → {group: {project: role}}. A group may give
    roles in several projects (name it once per project); a project id may
    hold ``:`` (the role is after the last one), not ``,`` or ``=``."""
    mapping: dict[str, dict[str, str]] = {}
    for item in raw.split(","):
        item = item.strip()
        if not item:
            continue
        group, sep, grant = item.partition("=")
        project, colon, role = grant.rpartition(":")
        group, project, role = group.strip(), project.strip(), role.strip()
        if not sep or not colon or not group or not project or role not in ("viewer", "reviewer", "steward"):
            raise ImproperlyConfigured(
                f"REVIEWER_OIDC_GROUP_ROLES: {item!r} is not group=project:role (role one of viewer, reviewer, steward)"
            )
        if project in mapping.get(group, {}):
            raise ImproperlyConfigured(f"REVIEWER_OIDC_GROUP_ROLES names {group}={project} twice")
        mapping.setdefault(group, {})[project] = role
    return mapping


def oidc_settings() -> dict[str, object] | None:
    """Single sign-on (reviewer/oidc.py), on when a client id is set. Endpoints
    come from the issuer's discovery document unless given one by one."""
    client_id = os.environ.get("REVIEWER_OIDC_CLIENT_ID", "").strip()
    if not client_id:
        return None
    issuer = os.environ.get("REVIEWER_OIDC_ISSUER", "").strip().rstrip("/")
    endpoints = {
        name: os.environ.get(f"REVIEWER_OIDC_{name.upper()}", "").strip()
        for name in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")
    }
    if not issuer and not all(endpoints.values()):
        raise ImproperlyConfigured(
            "REVIEWER_OIDC_CLIENT_ID is set: set REVIEWER_OIDC_ISSUER (endpoints from its discovery document) "
            "or all of REVIEWER_OIDC_AUTHORIZATION_ENDPOINT, _TOKEN_ENDPOINT, _USERINFO_ENDPOINT and _JWKS_URI"
        )
    secret = os.environ.get("REVIEWER_OIDC_CLIENT_SECRET", "")
    if not secret:
        raise ImproperlyConfigured("REVIEWER_OIDC_CLIENT_ID is set but REVIEWER_OIDC_CLIENT_SECRET is not")
    group_roles = oidc_group_roles(os.environ.get("REVIEWER_OIDC_GROUP_ROLES", ""))
    if not group_roles:
        raise ImproperlyConfigured(
            "REVIEWER_OIDC_GROUP_ROLES is empty: nobody could sign in (set it to group=project:role,...)"
        )
    return {
        "issuer": issuer,
        "client_id": client_id,
        "client_secret": secret,
        **endpoints,
        "provider_name": os.environ.get("REVIEWER_OIDC_PROVIDER_NAME", "").strip() or "single sign-on",
        "scopes": os.environ.get("REVIEWER_OIDC_SCOPES", "").strip() or "openid email profile",
        "groups_claim": os.environ.get("REVIEWER_OIDC_GROUPS_CLAIM", "").strip() or "groups",
        "sign_algo": os.environ.get("REVIEWER_OIDC_SIGN_ALGO", "").strip() or "RS256",
        "group_roles": group_roles,
        # how long a single sign-on session lasts: then the person signs in again and their roles are re-read
        "session_seconds": env_seconds("REVIEWER_OIDC_SESSION_SECONDS", 8 * 3600),
    }


REVIEWER_OIDC = oidc_settings()

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("REVIEWER_LOG_LEVEL", "INFO")},
}
