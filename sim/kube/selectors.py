"""Label selectors and list pagination, as the Kubernetes API applies them."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")
Requirement = Callable[[Mapping[str, str]], bool]

_SET = re.compile(r"^\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ = re.compile(r"^\s*([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)([\w./-]+)\s*$")


class SelectorError(ValueError):
    """A label selector that does not parse."""


def _split(selector: str) -> list[str]:
    """Split on commas that are not inside a `( ... )` value set."""
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def _requirement(term: str) -> Requirement:
    if m := _SET.match(term):
        key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",")}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _EQ.match(term):
        key, op, value = m.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if m := _EXISTS.match(term):
        negate, key = m.group(1) == "!", m.group(2)
        return lambda labels: (key in labels) != negate
    raise SelectorError(f"unable to parse requirement: {term.strip()!r}")


def parse_selector(selector: str | None) -> Requirement:
    """One predicate for the whole selector (every requirement must hold)."""
    requirements = [_requirement(term) for term in _split(selector or "")]
    return lambda labels: all(r(labels) for r in requirements)


def encode_continue(offset: int, resource_version: str) -> str:
    raw = json.dumps({"offset": offset, "rv": resource_version}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token: str | None) -> int:
    """The offset a continue token points at; 0 without one."""
    if not token:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        offset = int(data["offset"])
    except (binascii.Error, ValueError, KeyError, TypeError) as exc:
        raise SelectorError("invalid continue token") from exc
    if offset < 0:
        raise SelectorError("invalid continue token")
    return offset


def paginate(items: Sequence[T], limit: int | None, token: str | None, rv: str) -> tuple[list[T], str]:
    """One page and the continue token for the next (empty when this is the last page)."""
    start = decode_continue(token)
    if not limit or limit <= 0:
        return list(items[start:]), ""
    end = start + limit
    return list(items[start:end]), encode_continue(end, rv) if end < len(items) else ""
