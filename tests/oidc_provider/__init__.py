"""A real OpenID Connect provider for the single sign-on tests: a tiny Django
project on django-oauth-toolkit's OIDC support, run in a second process on
loopback (``python -m tests.oidc_provider.serve``; see ``serve.py``)."""
