"""The `private_metadata` of proxybot's modals, signed: Slack hands it back from the person's client, so
a submission is believed only with a signature proxybot made when it opened the modal.

The token is `<base64url JSON>.<hex HMAC-SHA256>`, keyed by a key derived from the Slack signing secret
(never the secret itself), and carries when it was made: a token older than `MAX_AGE` is refused too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from bot.errors import InputError

MAX_AGE = 3600.0  # a modal left open longer than an hour is opened again
MAX_METADATA = 3000  # Slack's limit on private_metadata
_CONTEXT = b"proxybot modal private_metadata v1"


def _key(secret: str) -> bytes:
    return hmac.new(secret.encode(), _CONTEXT, hashlib.sha256).digest()


def sign(fields: Mapping[str, Any], secret: str, now: float) -> str:
    """`fields` (JSON values) and the time, signed; at most Slack's 3 000 characters (ValueError else)."""
    body = base64.urlsafe_b64encode(json.dumps({**fields, "at": now}, separators=(",", ":")).encode())
    mac = hmac.new(_key(secret), body, hashlib.sha256).hexdigest()
    token = f"{body.decode()}.{mac}"
    if len(token) > MAX_METADATA:
        raise ValueError("modal metadata over Slack's 3000 characters")
    return token


def verify(token: str, secret: str, now: float) -> dict[str, Any]:
    """The fields of a token this proxybot signed less than `MAX_AGE` ago; InputError for anything else."""
    body, _, mac = token.partition(".")
    want = hmac.new(_key(secret), body.encode(), hashlib.sha256).hexdigest()
    if not mac or not hmac.compare_digest(mac, want):
        raise InputError("the form's metadata is not proxybot's (its signature does not match)")
    fields = json.loads(base64.urlsafe_b64decode(body.encode()))
    if not isinstance(fields, dict) or not isinstance(fields.get("at"), int | float):
        raise InputError("the form's metadata is malformed")
    if not 0 <= now - float(fields["at"]) <= MAX_AGE:
        raise InputError("the form was opened too long ago: open it again")
    return fields
