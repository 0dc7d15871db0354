"""Start the test OpenID provider on a free loopback port.

    python -m tests.oidc_provider.serve CONFIG.json

CONFIG names the client (``client_id``, ``client_secret``, ``redirect_uri``)
and the people (``username``, ``password``, ``email``, ``groups``). The
provider generates its RS256 key, creates its database in a temporary
directory, prints ``READY <issuer>`` on stdout and serves until killed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import uuid

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def main(config_path: str) -> None:
    with open(config_path) as f:
        config = json.load(f)
    server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler, ipv6=False)
    issuer = f"http://127.0.0.1:{server.server_address[1]}/o"
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "tests.oidc_provider.settings",
            "OIDC_PROVIDER_DATA": tempfile.mkdtemp(prefix="oidc-provider-"),
            "OIDC_PROVIDER_SECRET": uuid.uuid4().hex,
            "OIDC_PROVIDER_ISSUER": issuer,
            "OIDC_PROVIDER_KEY": key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ).decode(),
        }
    )
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import Application

    call_command("migrate", verbosity=0)
    for person in config["people"]:
        user = User.objects.create_user(person["username"], email=person.get("email", ""), password=person["password"])
        for name in person.get("groups", []):
            user.groups.add(Group.objects.get_or_create(name=name)[0])
    Application.objects.create(
        name="Reviewer",
        client_id=config["client_id"],
        client_secret=config["client_secret"],
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=config["redirect_uri"],
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )
    server.set_app(get_wsgi_application())
    print(f"READY {issuer}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1])
