"""Credentials taken out of text read from outside (pod logs) before it is shown anywhere.

Whatever looks like one is replaced by `[REDACTED]`, keeping the words around it so the line still
reads: `Authorization:` header values, bearer and basic tokens, JWTs, passwords in URLs, PEM private
keys, the well-known token shapes (Slack, GitHub, AWS, GitLab, Google), and the value of any field whose
name says it is secret (`token=`, `"password": "…"`, `apiKey: …`, `client_secret=…`). It errs on the side
of hiding: a lost word costs less than a leaked key.
"""

from __future__ import annotations

import re

MARK = "[REDACTED]"

# Field names that say their value is a secret (JSON keys, key=value, key: value, query parameters).
_SECRETIVE_FIELD = (
    r"(?:[A-Za-z0-9_.-]*?(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|client[_-]?secret|credentials?|session[_-]?id|cookie|signature))"
)
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM blocks, whole (one line or several).
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
        MARK,
    ),
    # Authorization / Proxy-Authorization header values, up to a quote, comma-brace or the line's end.
    (
        re.compile(r"((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)[^\"'\n\r}\]]+", re.I),
        rf"\1{MARK}",
    ),
    (re.compile(r"\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}", re.I), rf"\1\2{MARK}"),
    # "token <value>" only when the value has a digit in it: "token provided" stays readable.
    (re.compile(r"\b(token)(\s+)(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{16,}", re.I), rf"\1\2{MARK}"),
    # JWTs: three base64url parts, the first a JSON header.
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), MARK),
    # user:password@ in any URL.
    (re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)[^@\s/]+@"), rf"\1{MARK}@"),
    # Well-known token shapes.
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{8,}"), MARK),
    (re.compile(r"\bxapp-[A-Za-z0-9-]{8,}"), MARK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), MARK),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), MARK),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MARK),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), MARK),
    # "secretName": "value" (JSON), secretName="value" or 'value' (quoted), secretName=value (bare).
    (re.compile(rf"(\"{_SECRETIVE_FIELD}\"\s*:\s*\")[^\"]*(\")", re.I), rf"\1{MARK}\2"),
    (re.compile(rf"(\b{_SECRETIVE_FIELD}\s*[=:]\s*)([\"'])(?:(?!\2).)*\2", re.I), rf"\1\2{MARK}\2"),
    (
        re.compile(rf"(\b{_SECRETIVE_FIELD}\s*[=:]\s*)(?![\s\"'{{\[]|\[REDACTED\])[^\s,;&\"'}}\]]+", re.I),
        rf"\1{MARK}",
    ),
)


_SECRET_NAME = re.compile(rf"{_SECRETIVE_FIELD}$", re.I)
# A key of any kind: `key`, `ssh_key`, `tls.key`, `sshKey` (not `monkey`).
_KEY_NAME = re.compile(r"(?:^|[_.-])(?i:key)$|[a-z0-9]Key$")


def secret_name(name: str) -> bool:
    """Whether a field named `name` holds a secret (`password`, `apiKey`, `client_secret`, ...): its value
    is never shown, whatever it looks like."""
    return _SECRET_NAME.search(name) is not None or _KEY_NAME.search(name) is not None


def redact(text: str) -> str:
    """`text` with everything that looks like a credential replaced by `[REDACTED]`."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
