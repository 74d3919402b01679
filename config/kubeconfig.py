"""A configured kubeconfig file judged before the Kubernetes client loads it, so a mistake names its file and
whose file it is.

The client (`kubernetes.config`) needs `clusters`, `contexts` and `users`, the chosen context (the configured
one, else the file's `current-context`) among `contexts`, and that context's cluster and user in the lists;
otherwise it says only `Invalid kube-config file. Expected key contexts` once `serve` is running. A user with
no credentials at all loads, and then every request is anonymous (401 or 403 on every read): what a
kubeconfig written from a ServiceAccount token Secret before Kubernetes filled the token in looks like.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from config.fields import Loc, format_loc

# (message, fatal even for `check`): a missing file only warns there, it may be mounted at deploy time.
Problem = tuple[str, bool]
_LISTS = ("clusters", "contexts", "users")
# What the client authenticates with: each entry is keys that must all be set, each key one of its spellings
# (a client certificate needs its key, basic auth its password).
_CREDENTIALS: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("token",),),
    (("tokenFile",),),
    (("exec",),),
    (("auth-provider",),),
    (("client-certificate", "client-certificate-data"), ("client-key", "client-key-data")),
    (("username",), ("password",)),
)


@dataclass(frozen=True)
class KubeconfigUse:
    """One configured kubeconfig: the mapping that names it, whose it is, and the contexts read from it."""

    loc: Loc  # the mapping holding `kubeconfig` (and `context`)
    owner: str  # "cluster prod", "target payments/ledger", "cluster prod's control plane"
    path: Path
    contexts: tuple[tuple[Loc, str | None], ...]  # (where it is configured, its name; None: current-context)

    @property
    def about(self) -> str:
        return f"{self.path} (the kubeconfig of {self.owner})"


def kubeconfig_problems(use: KubeconfigUse) -> Iterator[Problem]:
    """What the Kubernetes client would refuse in this file, each `location: message`."""
    where = format_loc((*use.loc, "kubeconfig"))
    document, problem = _read(use)
    if problem is not None:
        yield f"{where}: {problem[0]}", problem[1]
        return
    shape = _shape(document)
    if shape is not None:
        yield f"{where}: {use.about} is not a kubeconfig: {shape}", True
        return
    for loc, context in use.contexts:
        found = _context_problem(use, document, context)
        if found is not None:
            yield f"{format_loc(loc) if context is not None else where}: {found}", True


def _read(use: KubeconfigUse) -> tuple[Any, Problem | None]:
    try:
        text = use.path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, (f"{use.about} does not exist", False)
    except UnicodeDecodeError:
        return None, (f"{use.about} is not UTF-8 text", True)
    except OSError as exc:
        return None, (f"{use.about} cannot be read: {exc.strerror or exc}", True)
    try:
        return yaml.safe_load(text), None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        at = f" (line {mark.line + 1} column {mark.column + 1})" if mark else ""
        return None, (f"{use.about} is not valid YAML{at}", True)
    except yaml.YAMLError:
        return None, (f"{use.about} is not valid YAML", True)


def _shape(document: Any) -> str | None:
    if not isinstance(document, dict):
        return "expected a mapping with clusters, contexts and users (what `kubectl config view` prints)"
    for key in _LISTS:
        entries = document.get(key)
        if not isinstance(entries, list) or not entries:
            return f"it lists no {key}"
        if not all(isinstance(entry, dict) and isinstance(entry.get("name"), str) for entry in entries):
            return f"an entry of its {key} has no name"
    return None


def _named(document: dict[str, Any], key: str) -> dict[str, Any]:
    return {entry["name"]: entry.get(key.removesuffix("s")) for entry in document[key]}


def _context_problem(use: KubeconfigUse, document: dict[str, Any], context: str | None) -> str | None:
    contexts = _named(document, "contexts")
    known = ", ".join(sorted(contexts))
    chosen = context if context is not None else document.get("current-context")
    if not chosen:
        return f"{use.about} has no current-context: name one of its contexts ({known}) in `context`"
    if chosen not in contexts:
        if context is None:
            return f"the current-context {chosen!r} of {use.about} is not one of its contexts ({known})"
        return f"{chosen!r} is not a context in {use.about}; it has: {known}"
    entry = contexts[chosen]
    if not isinstance(entry, dict):
        return f"context {chosen!r} of {use.about} has no `context` mapping"
    for key in ("cluster", "user"):
        name = entry.get(key)
        if name is None:
            return f"context {chosen!r} of {use.about} names no {key}"
        if name not in _named(document, f"{key}s"):
            return f"context {chosen!r} of {use.about} names {key} {name!r}, which is not in its {key}s"
    user = entry["user"]
    if not _has_credentials(_named(document, "users")[user]):
        return (
            f"user {user!r} of {use.about} has no credentials (no token, tokenFile, client certificate, exec "
            "or auth-provider), so every request would be anonymous: was it written from a token Secret "
            "before Kubernetes filled the token in?"
        )
    return None


def _has_credentials(user: Any) -> bool:
    if not isinstance(user, dict):
        return False
    return any(all(any(user.get(key) for key in keys) for keys in needed) for needed in _CREDENTIALS)
