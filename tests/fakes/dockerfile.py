"""A small Dockerfile parser, enough to check ours without a Docker engine (tests/test_dockerfile.py, and
the Deployment's user in tests/config/test_deploy.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Stage:
    """One `FROM` and the instructions under it."""

    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]


def logical_lines(text: str) -> Iterator[str]:
    """Instructions with `\\` continuations joined; comments and blank lines dropped, as Docker does."""
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield pending + line
        pending = ""
    assert not pending, "the Dockerfile ends inside a continuation"


def substituted(word: str, args: Mapping[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args[m.group(1) or m.group(2)], word)


def parse_dockerfile(text: str, build_args: Mapping[str, str] | None = None) -> list[Stage]:
    """The stages, `FROM` resolved with the global ARGs' defaults, or `build_args` (`--build-arg`)."""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical_lines(text):
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name] = default
        elif keyword == "FROM":
            base = substituted(rest.split()[0], args | dict(build_args or {}))
            words = rest.split()
            stages.append(Stage(base, words[2] if len(words) == 3 and words[1].upper() == "AS" else None))
        else:
            assert stages, f"{keyword} before the first FROM"
            stages[-1].instructions.append((keyword, rest))
    return stages


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list), args
    return [str(word) for word in value]


def stages() -> list[Stage]:
    return parse_dockerfile((ROOT / "Dockerfile").read_text())


def final_user() -> tuple[str, str]:
    user = stages()[-1].all("USER")
    assert user, "the final stage sets no USER: it would run as root"
    uid, _, gid = user[-1].partition(":")
    return uid, gid
