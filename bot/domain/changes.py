"""What defines the resource proxy on one platform instance, how two of its versions differ, and what an alert
says of the changes before it fired. Pure: versions in, sentences and a bounded diff out.

An instance's defining facts are its vcluster.yaml's `experimental.proxy` section and
`policies.networkPolicy`, and its vCluster version; a value under a key named like a secret (`password`,
`token`, any `key`: `bot.domain.redact.secret_name`) is replaced before the facts are kept or shown. Two
versions differ by `Change`s: a `customResources` entry enabled, disabled (removed, or `enabled: false`),
retargeted or its `accessResources` changed; another key of the proxy section or of the NetworkPolicy values
changed; the version (a new version is a control plane restarted with it); the vcluster.yaml unreadable.
A `ChangeReport` is an alert's: the changes of its client and target within a window before it fired,
newest first, or why the history could not be read; its `line` is one sentence, its `diff` bounded.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import pairwise
from typing import Any

from bot.domain.redact import MARK, redact, secret_name

# An alert's window before it fired, unless told.
WINDOW_SECONDS = 30 * 60.0
# What the alert's line names at most; the rest is counted there and shown in the details.
LINE_CHANGES = 3
# The details' diff: at most so many lines and characters, then how much was left out.
DIFF_LINES = 24
DIFF_CHARS = 1100
LINE_CHARS = 160  # one line of the diff at most
RESOURCES = "customResources"


@dataclass(frozen=True, slots=True)
class InstanceFacts:
    """What defines the proxy on one instance, as one reading saw it; secret values already replaced."""

    proxy: Mapping[str, Any] | None = None  # `experimental.proxy`; None: the vcluster.yaml has none
    network_policy: Mapping[str, Any] | None = None  # `policies.networkPolicy`
    version: str | None = None
    unreadable: str | None = None  # why the vcluster.yaml could not be read (then nothing else is known)

    @classmethod
    def of(cls, values: object, version: str | None) -> InstanceFacts:
        """The facts of a parsed vcluster.yaml (None: the platform reports none)."""
        if values is None:
            return cls(version=version)
        if not isinstance(values, Mapping):
            return cls(version=version, unreadable="its vcluster.yaml is not a mapping")
        proxy = _section(values, "experimental", "proxy")
        policy = _section(values, "policies", "networkPolicy")
        return cls(_redacted(proxy), _redacted(policy), version)

    @classmethod
    def unreadable_yaml(cls, version: str | None, why: str) -> InstanceFacts:
        return cls(version=version, unreadable=why)

    def document(self) -> dict[str, Any]:
        """The facts as JSON-able data, as the store keeps them."""
        return {
            "proxy": self.proxy,
            "networkPolicy": self.network_policy,
            "version": self.version,
            "unreadable": self.unreadable,
        }

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> InstanceFacts:
        return cls(doc.get("proxy"), doc.get("networkPolicy"), doc.get("version"), doc.get("unreadable"))

    @property
    def digest(self) -> str:
        """Equal for equal facts, whatever the order of their keys: two readings of one version agree."""
        blob = json.dumps(self.document(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode()).hexdigest()


def _section(values: Mapping[str, Any], outer: str, inner: str) -> Mapping[str, Any] | None:
    parent = values.get(outer)
    found = parent.get(inner) if isinstance(parent, Mapping) else None
    return found if isinstance(found, Mapping) else None


def _redacted(value: Any) -> Any:
    """`value` with every value under a secret-named key replaced, and secret-looking text redacted."""
    if isinstance(value, Mapping):
        return {str(k): MARK if secret_name(str(k)) else _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    if isinstance(value, str):
        return redact(value)
    return value


@dataclass(frozen=True, slots=True)
class InstanceVersion:
    """One version of an instance's facts: its number in the instance's history and when it was read."""

    instance: str  # `<project>/<name>`
    seq: int
    at: float
    facts: InstanceFacts


class ChangeKind(StrEnum):
    ENABLED = "enabled"
    DISABLED = "disabled"
    RETARGETED = "retargeted"
    ACCESS = "access"
    PROXY = "proxy"  # another key of the proxy section
    POLICY = "policy"
    VERSION = "version"
    UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between two versions: what changed (`subject`: an entry's key, a path) and how."""

    kind: ChangeKind
    subject: str = ""
    before: str | None = None
    after: str | None = None

    @property
    def restarts(self) -> bool:
        """Said of the control plane rather than of the vcluster.yaml."""
        return self.kind is ChangeKind.VERSION

    def words(self) -> str:
        """The change as a verb phrase: `disabled `widgets.example.com/v1``."""
        was = f" (was {self.before})" if self.before else ""
        match self.kind:
            case ChangeKind.ENABLED:
                to = f" to {self.after}" if self.after else ""
                return f"enabled `{self.subject}`{to}"
            case ChangeKind.DISABLED:
                return f"disabled `{self.subject}`"
            case ChangeKind.RETARGETED:
                return f"retargeted `{self.subject}` to {self.after}{was}"
            case ChangeKind.ACCESS:
                return f"set `{self.subject}` accessResources to {self.after}{was}"
            case ChangeKind.PROXY:
                return f"changed experimental.proxy.{self.subject}"
            case ChangeKind.POLICY:
                return f"changed policies.networkPolicy{'.' + self.subject if self.subject else ''}"
            case ChangeKind.VERSION:
                return f"restarted with vcluster {self.after or 'an unknown version'}{was}"
            case ChangeKind.UNREADABLE:
                return f"could not be read ({self.after})" if self.after else "became readable again"


def diff_facts(before: InstanceFacts, after: InstanceFacts, project: str) -> tuple[Change, ...]:
    """What changed from `before` to `after` of an instance in `project` (an entry's target is named
    `<project>/<name>`, as alerts name targets, its project the instance's unless the entry names one)."""
    if before.unreadable != after.unreadable and (before.unreadable or after.unreadable):
        changes: list[Change] = [Change(ChangeKind.UNREADABLE, after=after.unreadable)]
    else:
        changes = []
    if not after.unreadable and not before.unreadable:
        changes += _proxy_changes(before.proxy or {}, after.proxy or {}, project)
        changes += [Change(ChangeKind.POLICY, p) for p in _paths(before.network_policy, after.network_policy)]
    if before.version != after.version:
        changes.append(Change(ChangeKind.VERSION, before=before.version, after=after.version))
    return tuple(changes)


def _proxy_changes(before: Mapping[str, Any], after: Mapping[str, Any], project: str) -> list[Change]:
    old, new = _entries(before), _entries(after)
    changes: list[Change] = []
    for key in sorted(old.keys() | new.keys()):
        was, now = old.get(key), new.get(key)
        on_before, on_after = _enabled(was), _enabled(now)
        if on_before and not on_after:
            changes.append(Change(ChangeKind.DISABLED, key))
        elif on_after and not on_before:
            changes.append(Change(ChangeKind.ENABLED, key, after=_target(now, project)))
        elif on_after and was is not None and now is not None:
            changes += _entry_changes(key, was, now, project)
    rest_before = {k: v for k, v in before.items() if k != RESOURCES}
    rest_after = {k: v for k, v in after.items() if k != RESOURCES}
    changes += [Change(ChangeKind.PROXY, p) for p in _paths(rest_before, rest_after)]
    return changes


def _entry_changes(key: str, was: Mapping[str, Any], now: Mapping[str, Any], project: str) -> list[Change]:
    changes: list[Change] = []
    if _target(was, project) != _target(now, project):
        changes.append(Change(ChangeKind.RETARGETED, key, _target(was, project), _target(now, project)))
    if was.get("accessResources") != now.get("accessResources"):
        changes.append(
            Change(ChangeKind.ACCESS, key, _text(was, "accessResources"), _text(now, "accessResources"))
        )
    rest = ("enabled", "targetVirtualCluster", "accessResources")
    for path in _paths(
        {k: v for k, v in was.items() if k not in rest}, {k: v for k, v in now.items() if k not in rest}
    ):
        changes.append(Change(ChangeKind.PROXY, f"{RESOURCES}.{key}.{path}"))
    return changes


def _entries(proxy: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found = proxy.get(RESOURCES)
    if not isinstance(found, Mapping):
        return {}
    return {str(k): v for k, v in found.items() if isinstance(v, Mapping)}


def _enabled(entry: Mapping[str, Any] | None) -> bool:
    return entry is not None and entry.get("enabled", True) is not False


def _target(entry: Mapping[str, Any] | None, project: str) -> str | None:
    target = entry.get("targetVirtualCluster") if entry is not None else None
    if not isinstance(target, Mapping) or not target.get("name"):
        return None
    return f"{target.get('project') or project}/{target['name']}"


def _text(entry: Mapping[str, Any], key: str) -> str | None:
    value = entry.get(key)
    return None if value is None else str(value)


def _paths(before: Any, after: Any, prefix: str = "") -> list[str]:
    """The shallowest paths at which `before` and `after` differ (a list or scalar changed whole)."""
    if before == after:
        return []
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        found: list[str] = []
        for key in sorted({str(k) for k in (*before.keys(), *after.keys())}):
            found += _paths(before.get(key), after.get(key), f"{prefix}.{key}" if prefix else key)
        return found
    return [prefix]


@dataclass(frozen=True, slots=True)
class VersionChange:
    """What one new version of an instance changed, when it was read, and its diff."""

    instance: str
    at: float
    changes: tuple[Change, ...]
    before: InstanceFacts
    after: InstanceFacts

    @property
    def name(self) -> str:
        return self.instance.rpartition("/")[2]

    def sentence(self) -> str:
        """`team-a's vcluster.yaml disabled `x`; team-a's control plane restarted with vcluster 0.28.1`."""
        parts: list[str] = []
        yaml_changes = [c.words() for c in self.changes if not c.restarts]
        if yaml_changes:
            parts.append(f"{self.name}'s vcluster.yaml {_listed(yaml_changes)}")
        parts += [f"{self.name}'s control plane {c.words()}" for c in self.changes if c.restarts]
        return "; ".join(parts)

    def diff_lines(self) -> list[str]:
        """The facts before and after as a unified diff (keys sorted), headers left out."""
        old, new = _shown(self.before), _shown(self.after)
        lines = difflib.unified_diff(old, new, lineterm="", n=1)
        return [line for line in lines if not line.startswith(("---", "+++"))]


def _listed(phrases: Sequence[str], last: str = "and") -> str:
    return phrases[0] if len(phrases) == 1 else f"{', '.join(phrases[:-1])} {last} {phrases[-1]}"


def _shown(facts: InstanceFacts) -> list[str]:
    """The facts as the diff shows them, one line per leaf: an entry's fields after its key, the rest of
    the proxy section under `experimental.proxy`, the NetworkPolicy values under `networkPolicy`."""
    if facts.unreadable:
        return [f"vcluster.yaml: unreadable ({facts.unreadable})", f"version: {facts.version}"]
    proxy = dict(facts.proxy or {})
    entries = proxy.pop(RESOURCES, None)
    lines: list[str] = []
    if isinstance(entries, Mapping):
        for key in sorted(entries, key=str):
            lines += [f"{key} {leaf}" for leaf in _leaves(entries[key])]
    lines += _leaves(proxy, "experimental.proxy") if proxy else []
    if facts.network_policy is not None:
        lines += _leaves(facts.network_policy, "networkPolicy")
    return [*lines, f"version: {facts.version}"]


def _leaves(value: Any, prefix: str = "") -> list[str]:
    """One line per scalar: its path (`egress[1].to[0].podSelector`) and its value, clipped."""
    found: list[str] = []
    if isinstance(value, Mapping) and value:
        for key in sorted(value, key=str):
            found += _leaves(value[key], f"{prefix}.{key}" if prefix else str(key))
        return found
    if isinstance(value, list) and value:
        for index, item in enumerate(value):
            found += _leaves(item, f"{prefix}[{index}]")
        return found
    shown = redact(json.dumps(value, sort_keys=True, default=str))
    line = f"{prefix}: {shown}" if prefix else shown
    return [line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"]


def history_changes(versions: Sequence[InstanceVersion]) -> list[VersionChange]:
    """The changes of one instance's versions (in `seq` order): one per version after the first."""
    ordered = sorted(versions, key=lambda v: v.seq)
    found: list[VersionChange] = []
    for before, after in pairwise(ordered):
        project = after.instance.partition("/")[0]
        changes = diff_facts(before.facts, after.facts, project)
        if changes:
            found.append(VersionChange(after.instance, after.at, changes, before.facts, after.facts))
    return found


@dataclass(frozen=True, slots=True)
class EndHistory:
    """One end of an alert (its client, its target): its instance and its history read, or why not."""

    instance: str  # `<project>/<name>`
    versions: tuple[InstanceVersion, ...] = ()
    unreadable: str | None = None  # why its history could not be read

    @property
    def name(self) -> str:
        return self.instance.rpartition("/")[2]

    @property
    def kept(self) -> bool:
        """Whether anything of it was ever recorded (an instance the platform does not list has none)."""
        return bool(self.versions)


@dataclass(frozen=True)
class ChangeReport:
    """The changes of an alert's ends within `window` seconds before it fired (and any seen since), newest
    first; `unreadable` when the history could not be read at all."""

    fired_at: float
    window: float = WINDOW_SECONDS
    ends: tuple[EndHistory, ...] = ()
    unreadable: str | None = None
    # How often the platform is read: a change is stamped when a reading saw it, up to this much after it
    # was made, so one seen this soon after the alert fired may have come before it.
    every: float = 0.0
    changes: tuple[VersionChange, ...] = field(init=False)

    def __post_init__(self) -> None:
        since = self.fired_at - self.window
        found = [c for end in self.ends for c in history_changes(end.versions) if c.at > since]
        object.__setattr__(self, "changes", tuple(sorted(found, key=lambda c: (-c.at, c.instance))))

    @classmethod
    def failed(cls, fired_at: float, why: str, window: float = WINDOW_SECONDS) -> ChangeReport:
        return cls(fired_at, window, unreadable=why)

    def line(self) -> str:
        """The alert's one sentence of what changed before it (no trailing period; render adds layout)."""
        window = _span(self.window)
        if self.unreadable is not None:
            return f"Changes before it: unknown, the history could not be read ({self.unreadable})"
        told = [f"{self._when(c.at)}: {c.sentence()}" for c in self.changes[:LINE_CHANGES]]
        more = len(self.changes) - len(told)
        if more:
            told.append(f"and {more} earlier change{'s' if more > 1 else ''} (in the details)")
        notes = [f"{e.name}'s history could not be read ({e.unreadable})" for e in self.ends if e.unreadable]
        notes += [f"no history of {e.name} (not listed by the platform)" for e in self._unkept()]
        if told:
            return "; ".join([*told, *notes])
        checked = [e for e in self.ends if e.kept]
        if not checked:
            return "; ".join(notes) if notes else f"No change history kept for its ends (last {window})"
        names = [e.name for e in checked]
        whom = "either end" if len(checked) == len(self.ends) == 2 else _listed(names, "or")
        return "; ".join([f"No change to {whom} in the last {window}", *notes])

    def diff(self, max_lines: int = DIFF_LINES, max_chars: int = DIFF_CHARS) -> str:
        """Each change's diff, newest first, under a heading naming it; at most `max_lines` lines and
        `max_chars` characters, then how many lines were left out."""
        lines: list[str] = []
        for change in self.changes:
            lines.append(f"# {change.instance}, {self._when(change.at)}")
            lines += change.diff_lines()
        kept: list[str] = []
        size = 0
        for line in lines:
            if len(kept) == max_lines or size + len(line) + 1 > max_chars:
                break
            kept.append(line)
            size += len(line) + 1
        left = len(lines) - len(kept)
        if left:
            kept.append(f"… {left} more line{'s' if left > 1 else ''} left out")
        return "\n".join(kept)

    def _unkept(self) -> list[EndHistory]:
        return [e for e in self.ends if not e.kept and e.unreadable is None]

    def _when(self, at: float) -> str:
        ahead = self.fired_at - at
        if ahead >= 60:
            return f"{_span(ahead)} before"
        if ahead >= 0:
            return "just before"
        if -ahead <= self.every:
            return "around when it fired"
        return f"seen {_span(-ahead)} after it fired"


def _span(seconds: float) -> str:
    """`12 min`, `1 h 5 min`: whole minutes, as the alert's other ages are told."""
    minutes = max(1, int(seconds // 60))
    hours, rest = divmod(minutes, 60)
    if not hours:
        return f"{minutes} min"
    return f"{hours} h {rest} min" if rest else f"{hours} h"
