"""Settings for the test run: the real settings, with a throwaway data
directory and a test secret, set before they are read."""

import os
import tempfile
import uuid

os.environ.setdefault("DJANGO_SECRET_KEY", "test-secret-key-" + uuid.uuid4().hex)
os.environ.setdefault("DJANGO_SECURE_SSL_REDIRECT", "0")
os.environ["REVIEWER_DATA_DIR"] = tempfile.mkdtemp(prefix="reviewer-test-")
os.environ.pop("REVIEWER_STORE_URL", None)
os.environ.pop("REVIEWER_AUTH_DB", None)

from reviewer.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

# A file, not SQLite's shared in-memory database: the live server's request
# threads then each use their own connection, as a deployed server does.
DATABASES["default"]["TEST"] = {"NAME": os.path.join(os.environ["REVIEWER_DATA_DIR"], "test-auth.sqlite3")}  # noqa: F405
