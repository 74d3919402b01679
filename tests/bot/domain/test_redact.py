"""Credentials planted in log text come out as [REDACTED]; ordinary words and the proxy's lines survive."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.redact import MARK, redact, secret_name

# (planted text, the secret it carries)
PLANTED = [
    ("dial failed: Authorization: Bearer s3cr3tT0kenValue1234", "s3cr3tT0kenValue1234"),
    ('{"headers": {"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}}', "dXNlcjpwYXNzd29yZA=="),
    ("retrying with bearer abcDEF123456ghiJKL", "abcDEF123456ghiJKL"),
    ("proxy-authorization=Negotiate YIIKwQYGKwYBBQUCoIIKtTCCCrGg", "YIIKwQYGKwYBBQUCoIIKtTCCCrGg"),
    (
        "token eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLWJ5dGVz rejected",
        "eyJzdWIiOiJzeXN0ZW06c2EifQ",
    ),
    ("connecting to postgresql://proxybot:hunter2-long@db.internal:5432/proxybot", "hunter2-long"),
    ("GET https://admin:p4ss@platform.example.com/api failed", "p4ss"),
    ("config: password=correct-horse-battery", "correct-horse-battery"),
    ('login {"password": "tr0ub4dor&3", "user": "ops"}', "tr0ub4dor&3"),
    ("client_secret: 'quoted value with spaces'", "quoted value with spaces"),
    ("url=https://x.example/cb?access_token=abc123xyz&state=1", "abc123xyz"),
    ('{"apiKey":"AIzaSyA-1234567890abcdefghijklmnopqrstu"}', "AIzaSyA-1234567890abcdefghijklmnopqrstu"),
    ("aws key AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE"),
    ("slack said invalid_auth for xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"),
    ("app token xapp-1-A0123456789-0123456789-abcdef", "xapp-1-A0123456789-0123456789-abcdef"),
    ("git: ghp_abcdefghijklmnopqrstuvwxyz0123456789 denied", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("-----BEGIN EC PRIVATE KEY-----MHcCAQEEIBkg-----END EC PRIVATE KEY-----", "MHcCAQEEIBkg"),
    ("platform access key: accessKey=pk-9f8e7d6c5b4a", "pk-9f8e7d6c5b4a"),
]


@pytest.mark.parametrize(("text", "secret"), PLANTED, ids=range(len(PLANTED)))
def test_a_planted_credential_is_redacted(text: str, secret: str) -> None:
    shown = redact(text)
    assert secret not in shown
    assert MARK in shown


def test_the_words_around_a_credential_stay() -> None:
    assert (
        redact("dial failed: Authorization: Bearer s3cr3tT0ken1234")
        == "dial failed: Authorization: [REDACTED]"
    )
    assert redact("postgresql://proxybot:pw123@db:5432/x") == "postgresql://proxybot:[REDACTED]@db:5432/x"


PROXY_LINES = [
    "2024-05-01 10:00:00\tINFO\tproxy/dialer.go\tquarantining proxy target peer host after consecutive dial "
    'failures\t{"component": "vcluster", "host": "kube.ledger.payments.vcluster.invalid", '
    '"consecutiveFailures": 3, "target": "payments/ledger"}',
    "peer watch subscription is down and no fresh netmap is available lastNetmapAge=2m1s",
    "invalid token provided here",  # no value that looks like a token
    "tokenExpiry: 3600, design: fine",
]


@pytest.mark.parametrize("line", PROXY_LINES)
def test_lines_without_credentials_are_unchanged(line: str) -> None:
    assert redact(line) == line


@given(st.text(max_size=300))
def test_redact_never_raises_and_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True),
        ("dbPassword", True),
        ("token", True),
        ("apiKey", True),
        ("key", True),
        ("tls.key", True),
        ("ssh_key", True),
        ("sshKey", True),
        ("client_secret", True),
        ("monkey", False),
        ("keys", False),
        ("accessResources", False),
        ("targetVirtualCluster", False),
        ("tokenFile", False),  # a path to a secret, not the secret
    ],
)
def test_a_field_is_secret_by_its_name(name: str, secret: bool) -> None:
    assert secret_name(name) is secret
