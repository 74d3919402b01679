"""The vendor's log reference: which lines of a client control plane's (syncer) log mean something for
the resource proxy, what each means and what to do; and the matching of read lines against it.

A line is matched by substring, as the reference says to search. Lines come as the kubelet serves them
with `timestamps=true` (an RFC 3339 time, a space, the line); the fields vCluster writes after the
message (a JSON object, or `key=value` pairs) are read for the ones the reference names (`host`,
`consecutiveFailures`, `target`, `lastNetmapAge`). Every line is redacted (`bot.domain.redact`) before
anything keeps it. A line naming another target (its `target` field) or a group/version the target
does not proxy is left out: one client's control plane serves every target it proxies to.
Hostnames like `kube.<name>.<project>.vcluster.invalid` are the proxy's placeholder, rewritten to a
peer endpoint on every request: their presence is never a DNS problem, and a match says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from bot.domain.findings import Severity
from bot.domain.redact import redact

PLACEHOLDER_NOTE = (
    "`*.vcluster.invalid` hosts are the proxy's placeholder, rewritten to a peer endpoint on every "
    "request: not a DNS problem; the error around it carries the signal"
)
_PLACEHOLDER = re.compile(r"\b[a-z0-9.-]+\.vcluster\.invalid\b")
_KUBELET_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (.*)", re.S)
_PAIR = re.compile(r"\b([A-Za-z][A-Za-z0-9_]*)=(\"[^\"]*\"|\S+)")
# The fields a match shows (the reference names them), in this order.
SHOWN_FIELDS = ("host", "consecutiveFailures", "lastNetmapAge", "namespace", "error")
MAX_LINE = 2000  # longer lines are cut before matching: a log line is not a document


@dataclass(frozen=True, slots=True)
class LogReference:
    """One entry of the reference: the substrings that find it, its meaning, the action, how bad."""

    key: str
    substrings: tuple[str, ...]
    meaning: str
    action: str
    severity: Severity

    @property
    def label(self) -> str:
        return " / ".join(self.substrings)


REFERENCE: tuple[LogReference, ...] = (
    LogReference(
        "proxy_started",
        ("Starting proxy server", "Starting target transport"),
        "the proxy for a group/version started (one pair per configured group/version)",
        "None.",
        Severity.OK,
    ),
    LogReference(
        "startup_sync_timeout",
        ("peer cache did not sync in time for the startup probe",),
        "no peer list arrived from the platform within a minute of startup: requests get 503 and "
        "discovery the fallback document until one arrives",
        "Check the client's platform connectivity and its license.",
        Severity.CRITICAL,
    ),
    LogReference(
        "initial_probe_failed",
        ("initial probe of proxy target failed, requests will keep retrying",),
        "the startup reachability check to the target failed; serving goes on and each request retries",
        "Check the target's health (transient while the target restarts).",
        Severity.WARNING,
    ),
    LogReference(
        "quarantining_peer",
        ("quarantining proxy target peer host after consecutive dial failures",),
        "one endpoint left rotation for 20 s after 3 dial failures in a row",
        "Expected while the target restarts; sustained repetition means stale or unreachable peers "
        "(playbook: 503 errors persist after a target restart or upgrade).",
        Severity.WARNING,
    ),
    LogReference(
        "all_quarantined",
        ("all peer hosts for the proxy target are quarantined",),
        "every endpoint of the target is quarantined: requests fail fast with 503, discovery uses the "
        "fallback document",
        "Incident-grade: triage with the quick-triage verdict table (target pods Ready? peer "
        "publication, direct and relay paths).",
        Severity.CRITICAL,
    ),
    LogReference(
        "peer_watch_down",
        ("peer watch subscription is down and no fresh netmap is available",),
        "the platform's peer feed dropped and the cached peer list expired",
        "A client-to-platform problem: check that the client's control plane reaches the platform.",
        Severity.CRITICAL,
    ),
    LogReference(
        "namespace_created",
        ("creating namespace on target cluster",),
        "the first namespaced POST, PUT or PATCH found the namespace on the client but not on the target, "
        "and the proxy created it there",
        "None.",
        Severity.INFO,
    ),
    LogReference(
        "inject_labels_failed",
        ("inject source labels failed",),
        "a write body could not be parsed for ownership labels and went through without them",
        "Rare. With `owned` the object is invisible to its creator: check the caller's request "
        "encoding, and label the object by hand to adopt it.",
        Severity.WARNING,
    ),
)


def reference_of(text: str) -> LogReference | None:
    """The reference entry whose substring the line contains, if any."""
    return next((ref for ref in REFERENCE if any(s in text for s in ref.substrings)), None)


@dataclass(frozen=True, slots=True)
class LogLine:
    """One log line, redacted: when the kubelet says it was written, its text, the fields read from it."""

    at: datetime | None
    text: str
    fields: Mapping[str, str]


def parse_line(raw: str) -> LogLine:
    """A served line: the kubelet's time prefix (when there is one), the text redacted, its fields."""
    raw = raw.rstrip("\r\n")[:MAX_LINE]
    at: datetime | None = None
    found = _KUBELET_TIME.fullmatch(raw)
    if found is not None:
        try:
            at = datetime.fromisoformat(found.group(1))
            raw = found.group(2)
        except ValueError:
            at = None
    text = redact(raw)
    return LogLine(at, text, _fields(text))


def _fields(text: str) -> dict[str, str]:
    """The structured fields of a line: a trailing (or whole-line) JSON object, else key=value pairs."""
    start = text.find("{")
    while start != -1:
        try:
            loaded = json.loads(text[start:])
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(loaded, dict):
            return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in loaded.items()}
        break
    return {key: value.strip('"') for key, value in _PAIR.findall(text)}


@dataclass(frozen=True, slots=True)
class LogMatch:
    """The lines of one pod that one reference entry explains: how many, when, the last one."""

    pod: str
    reference: LogReference
    count: int
    first_at: datetime | None
    last_at: datetime | None
    last_line: str
    details: tuple[str, ...]  # the reference's fields of the last line, `name=value`
    placeholder_host: bool  # a `*.vcluster.invalid` host appears in the lines


@dataclass(frozen=True, slots=True)
class PodLog:
    """What was read of one control-plane pod: its lines, or why there are none."""

    pod: str
    lines: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class PodSummary:
    """One pod's part of the evidence: how many lines were read, or why none."""

    pod: str
    lines: int
    error: str | None


@dataclass(frozen=True, slots=True)
class LogEvidence:
    """The reference's lines for one target in its client's control-plane logs, per pod."""

    target: str
    namespace: str
    scope: str  # "last 100 lines", "last 10m"
    pods: tuple[PodSummary, ...]
    matches: tuple[LogMatch, ...]
    unavailable: str | None = None  # nothing could be listed at all (no access, not configured)

    @property
    def severity(self) -> Severity:
        return max((m.reference.severity for m in self.matches), default=Severity.OK)

    @property
    def complete(self) -> bool:
        """Every pod was listed and read."""
        return self.unavailable is None and bool(self.pods) and all(p.error is None for p in self.pods)


def _concerns(line: LogLine, target: str, group_versions: frozenset[str]) -> bool:
    named = line.fields.get("target")
    # `<project>/<name>` as the proxy labels its metrics, or the bare name.
    if named is not None and named not in (target, target.rpartition("/")[2]):
        return False
    gv = line.fields.get("groupVersion")
    return gv is None or not group_versions or gv in group_versions


def _match(pod: str, ref: LogReference, lines: list[LogLine]) -> LogMatch:
    last = lines[-1]
    details = tuple(f"{name}={last.fields[name]}" for name in SHOWN_FIELDS if name in last.fields)
    return LogMatch(
        pod=pod,
        reference=ref,
        count=len(lines),
        first_at=lines[0].at,
        last_at=last.at,
        last_line=last.text,
        details=details,
        placeholder_host=any(_PLACEHOLDER.search(line.text) for line in lines),
    )


def pod_matches(
    pod: str, raw_lines: Iterable[str], target: str, group_versions: Iterable[str] = ()
) -> list[LogMatch]:
    """The reference's entries found in one pod's lines for `target`, in the reference's order."""
    gvs = frozenset(group_versions)
    found: dict[str, list[LogLine]] = {}
    for raw in raw_lines:
        if reference_of(raw[:MAX_LINE]) is None:
            continue  # most lines are not the proxy's: skip them before parsing
        line = parse_line(raw)
        ref = reference_of(line.text)
        if ref is not None and _concerns(line, target, gvs):
            found.setdefault(ref.key, []).append(line)
    return [_match(pod, ref, found[ref.key]) for ref in REFERENCE if ref.key in found]


def log_evidence(
    target: str,
    namespace: str,
    scope: str,
    reads: Iterable[PodLog],
    group_versions: Iterable[str] = (),
) -> LogEvidence:
    """Match every pod's lines for `target`; worst entries first, then by pod."""
    reads = list(reads)
    matches = [m for read in reads for m in pod_matches(read.pod, read.lines, target, group_versions)]
    matches.sort(key=lambda m: (-m.reference.severity, REFERENCE.index(m.reference), m.pod))
    pods = tuple(PodSummary(r.pod, len(r.lines), r.error) for r in reads)
    return LogEvidence(target, namespace, scope, pods, tuple(matches))
