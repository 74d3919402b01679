"""Verified after resolve: `resolution.verify_after` after a group's episode resolves, its targets are probed
again through each affected client and the path is checked; the outcome is said in the message's thread.
Pure: the stored row, one target's recheck, the outcome and the sentences that say it.

A verification is one row per resolved episode of a message (`episode` = its `first_firing_at`), made when
the leader first sees the episode's record, due `verify_after` later, closed once with its outcome: a
group that fired again before it is `flapping`; else `verified` when every probe answered, `unverified`
when one still fails (which reopens nothing: the reply says so and the digest counts it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from bot.domain.deadline import EpisodeDeadline
from bot.domain.probe_result import LivePointer, ProbeOutcome

MAX_RECHECKS = 5  # (client, target) pairs probed again per episode: an incident's few, never a storm's


class VerificationOutcome(StrEnum):
    """How a verification ended."""

    VERIFIED = "verified"  # every probe answered 200
    UNVERIFIED = "unverified"  # a probe still fails after the resolve
    FLAPPING = "flapping"  # the group fired again before its verification was due


class Verification(EpisodeDeadline[VerificationOutcome]):
    """One resolved episode's verification, as stored; `outcome` None while it is pending."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Recheck:
    """One target probed again through one client: the probe's answer and the path check's verdict."""

    cluster: str
    target: str
    passed: bool
    status: int | None  # the failing (else the last) attempt's HTTP status; None without an answer
    seconds: float | None  # the probe's latency (the median of its answered attempts)
    failure: str = ""  # what the failing attempt said, in a few words ("upstream", "timeout")
    path: str | None = None  # the path check's verdict (`PathVerdict`'s value); None when not run


@dataclass(frozen=True, slots=True)
class Verdict:
    """A due verification's outcome and the sentence the thread reply (and the resolved message) says."""

    outcome: VerificationOutcome
    sentence: str

    @property
    def detail(self) -> str:
        """As its on-call event keeps it: the outcome, then the sentence (`of_detail` reads it back)."""
        return f"{self.outcome.value}\t{self.sentence}"

    @classmethod
    def of_detail(cls, detail: str) -> Verdict | None:
        """The verdict an on-call event kept (an outcome alone, as kept before the sentence was: no
        sentence); None when it is no outcome."""
        outcome, _, sentence = detail.partition("\t")
        try:
            return cls(VerificationOutcome(outcome), sentence)
        except ValueError:
            return None


# What a failing probe's answer says, in a few words after its status: "503 upstream".
_POINTED = {
    LivePointer.FEED: "no trusted peer snapshot",
    LivePointer.PEERS: "no healthy peers",
    LivePointer.REASON: "upstream",
}
_FAILED = {
    ProbeOutcome.UNAVAILABLE: "unavailable",
    ProbeOutcome.NOT_SERVED: "not served",
    ProbeOutcome.UNAUTHORIZED: "unauthorized",
    ProbeOutcome.FORBIDDEN: "forbidden",
    ProbeOutcome.TIMEOUT: "timed out",
    ProbeOutcome.UPGRADE_REJECTED: "upgrade rejected",
    ProbeOutcome.CONFLICT: "conflict",
    ProbeOutcome.UNREACHABLE: "client cluster unreachable",
    ProbeOutcome.HTTP_ERROR: "error",
}


def failure_words(outcome: ProbeOutcome, pointer: LivePointer | None) -> str:
    """A failing probe's answer in a few words: what the live state points at, else the outcome."""
    if outcome is ProbeOutcome.OK:
        return ""
    return _POINTED[pointer] if pointer is not None else _FAILED[outcome]


def clock(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M UTC")


def flapping(at: float) -> Verdict:
    """The group fired again before its verification, due at `at`."""
    return Verdict(
        VerificationOutcome.FLAPPING, f"fired again before its verification at {clock(at)}: flapping"
    )


def judged(rechecks: Sequence[Recheck], at: float) -> Verdict:
    """Verified when every probe answered; else unverified, naming the clients whose probe still fails."""
    failing = [r for r in rechecks if not r.passed]
    if not rechecks:
        return Verdict(VerificationOutcome.UNVERIFIED, "resolved, but no target of it could be probed again")
    if failing:
        return Verdict(VerificationOutcome.UNVERIFIED, _still_failing(failing, _several(rechecks)))
    return Verdict(VerificationOutcome.VERIFIED, f"verified {clock(at)}: {_answered(rechecks)}")


def _several(rechecks: Sequence[Recheck]) -> bool:
    return len({r.target for r in rechecks}) > 1


def _still_failing(failing: Sequence[Recheck], name_targets: bool) -> str:
    parts = [
        f"the probe{f' of {r.target}' if name_targets else ''} from {r.cluster} still fails ({_why(r)})"
        for r in failing
    ]
    return "resolved, but " + "; ".join(parts)


def _why(r: Recheck) -> str:
    words = " ".join(w for w in (str(r.status) if r.status is not None else "", r.failure) if w)
    return words or "no answer"


def _answered(rechecks: Sequence[Recheck]) -> str:
    clients = sorted({r.cluster for r in rechecks})
    who = clients[0] if len(clients) == 1 else f"{len(clients)} clients"
    statuses = sorted({r.status for r in rechecks if r.status is not None})
    status = "/".join(str(s) for s in statuses) or "answered"
    timed = [r.seconds for r in rechecks if r.seconds is not None]
    took = "" if not timed else f" in {round(max(timed) * 1000)} ms"
    return f"probe {status}{took} from {who}, {_path(rechecks)}"


def _path(rechecks: Sequence[Recheck]) -> str:
    verdicts = {r.path for r in rechecks}
    if verdicts == {"likely direct"}:
        return "direct path"
    if "likely relayed" in verdicts:
        return "relayed path"
    if verdicts == {None}:
        return "path not checked"
    return "path not judged"
