"""Kubernetes and proxy names, checked: pure functions of a string (no I/O, no third-party import), so the
domain can check the names that reach a URL path without importing the config's validators and what they
need (a cron parser, a database URL parser).

Each returns the value, or raises ValueError with a message naming it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(rf"{_LABEL}\Z")
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*\Z")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?\Z")
LABEL_MAX = 63
SUBDOMAIN_MAX = 253


def describe(value: str) -> str:
    """`value` quoted for a message, clipped to 80 characters."""
    shown = value if len(value) <= 80 else value[:80] + "…"
    return repr(shown)


def _label(value: str, pattern: re.Pattern[str], kind: str, rule: str) -> str:
    if len(value) > LABEL_MAX:
        raise ValueError(f"{describe(value)} is longer than {LABEL_MAX} characters")
    if not pattern.match(value):
        raise ValueError(f"{describe(value)} is not a {kind} label ({rule})")
    return value


def dns1123_label(value: str) -> str:
    """A namespace, project or tenant cluster name: lower-case alphanumerics and '-', at most 63."""
    rule = "lower-case letters, digits and '-', starting and ending with a letter or digit"
    return _label(value, DNS1123_LABEL, "DNS-1123", rule)


def dns1035_label(value: str) -> str:
    """A resource plural or API version: a DNS-1123 label that starts with a letter."""
    rule = "lower-case letters, digits and '-', starting with a letter, ending with a letter or digit"
    return _label(value, DNS1035_LABEL, "DNS-1035", rule)


def api_group(value: str) -> str:
    """A custom resource API group: a DNS-1123 subdomain with at least one dot, as for CRDs."""
    if len(value) > SUBDOMAIN_MAX:
        raise ValueError(f"{describe(value)} is longer than {SUBDOMAIN_MAX} characters")
    if not DNS1123_SUBDOMAIN.match(value) or any(len(part) > LABEL_MAX for part in value.split(".")):
        raise ValueError(f"{describe(value)} is not a DNS-1123 subdomain")
    if "." not in value:
        raise ValueError(f"{describe(value)} should be a domain with at least one dot, like example.com")
    return value


def _pair(value: str, shape: str, first: Callable[[str], str], second: Callable[[str], str]) -> str:
    """`<first>/<second>`, each part checked by its rule; errors name the whole value."""
    left, slash, right = value.partition("/")
    if not slash or not left or not right:
        raise ValueError(f"{describe(value)} is not of the form {shape}")
    try:
        first(left)
        second(right)
    except ValueError as exc:
        raise ValueError(f"{describe(value)}: {exc}") from None
    return value


def group_version(value: str) -> str:
    """`<group>/<version>` of a proxied custom resource; the core group cannot be proxied."""
    return _pair(value, "<group>/<version>, like example.com/v1", api_group, dns1035_label)


def target_name(value: str) -> str:
    """`<project>/<name>` of a target tenant cluster: the `target` label of every proxy series."""
    return _pair(value, "<project>/<name>", dns1123_label, dns1123_label)
