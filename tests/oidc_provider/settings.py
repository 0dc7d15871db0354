"""The test provider's settings. ``serve.py`` sets the environment they read
(the issuer address, the signing key, a throwaway data directory) before
Django starts."""

import os

DEBUG = False
SECRET_KEY = "test-provider-" + os.environ["OIDC_PROVIDER_SECRET"]
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "tests.oidc_provider.urls"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.path.join(os.environ["OIDC_PROVIDER_DATA"], "provider.sqlite3"),
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
# The dashboard under test runs on the same host (127.0.0.1, another port) and
# cookies are per host, not per port: the provider's cookies have names of their own.
SESSION_COOKIE_NAME = "provider_session"
CSRF_COOKIE_NAME = "provider_csrftoken"
LOGIN_URL = "/accounts/login/"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "OPTIONS": {
            "context_processors": ["django.template.context_processors.request"],
            "loaders": [
                (
                    "django.template.loaders.locmem.Loader",
                    {
                        "registration/login.html": (
                            "<!doctype html><title>Acme sign-in</title><h1>Acme identity provider</h1>"
                            '<form method="post">{% csrf_token %}{{ form.as_p }}'
                            '<input type="hidden" name="next" value="{{ next }}">'
                            '<button type="submit" id="provider-submit">Sign in to Acme</button></form>'
                        )
                    },
                )
            ],
        },
    }
]
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": os.environ["OIDC_PROVIDER_KEY"],
    "OIDC_ISS_ENDPOINT": os.environ["OIDC_PROVIDER_ISSUER"],
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.validator.GroupsValidator",
    "SCOPES": {"openid": "OpenID Connect", "email": "email", "profile": "profile"},
    "PKCE_REQUIRED": True,
}
