"""Settings for the test run: the real settings, with a throwaway data
directory and a test secret, set before they are read.

``REVIEWER_TEST_DATABASE=postgresql`` keeps the auth tables (users, grants,
sessions, tokens) on a throwaway PostgreSQL cluster that this module starts
(``tests/postgres.py``) instead of a SQLite file; a cluster that cannot start
fails the run."""

import atexit
import os
import shutil
import tempfile
import uuid

os.environ.setdefault("DJANGO_SECRET_KEY", "test-secret-key-" + uuid.uuid4().hex)
os.environ.setdefault("DJANGO_SECURE_SSL_REDIRECT", "0")
os.environ["REVIEWER_DATA_DIR"] = tempfile.mkdtemp(prefix="reviewer-test-")
# removed at exit, after the store's own exit handler (registered later, so run
# earlier) has stopped the embedded server
atexit.register(shutil.rmtree, os.environ["REVIEWER_DATA_DIR"], ignore_errors=True)
os.environ.pop("REVIEWER_STORE_URL", None)
os.environ.pop("REVIEWER_AUTH_DB", None)
os.environ.pop("REVIEWER_CACHE_DIR", None)
TEST_DATABASE = os.environ.get("REVIEWER_TEST_DATABASE", "sqlite").strip() or "sqlite"
if TEST_DATABASE == "postgresql":
    from tests.postgres import Cluster

    os.environ["DATABASE_URL"] = Cluster().start()  # stopped and removed at exit
elif TEST_DATABASE == "sqlite":
    os.environ.pop("DATABASE_URL", None)
else:
    raise RuntimeError(f"REVIEWER_TEST_DATABASE must be sqlite or postgresql, not {TEST_DATABASE!r}")

from reviewer.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
# the store waits 30 s for an answer, not 1.5: a test machine running several
# suites at once can be that slow (tests/web/test_store_hangs.py opens its own)
REVIEWER_STORE_URL += "?timeout=30"  # noqa: F405

# The tests do not run collectstatic: templates name the files as they are
# (`manage.py serve` and its test use the hashed names).
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405  (WhiteNoise looks there; empty in tests)

if TEST_DATABASE == "sqlite":
    # A file, not SQLite's shared in-memory database: the live server's request
    # threads then each use their own connection, as a deployed server does.
    DATABASES["default"]["TEST"] = {"NAME": os.path.join(os.environ["REVIEWER_DATA_DIR"], "test-auth.sqlite3")}  # noqa: F405
