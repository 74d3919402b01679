"""How bad an alert group is now, in one line: the lead alert's standing (and verdict when it fits), then
the peers per state per group/version, folded to one segment when every cache agrees, the caches of each
state named by what sets them apart (a replica, a target, group/versions) when they do not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.domain.alert_summary import PeerCacheState, PeerReading, fold_peers
from bot.domain.diagnosis_readings import fmt_count
from bot.domain.messages import AlertGroupView, AlertView
from bot.render.alert_fit import fitted, lines_of, name, names
from bot.render.slack import STANDING_WORDS
from bot.render.verdict import VERDICT_MARK


def now_line(view: AlertGroupView, lead: AlertView) -> str:
    """How bad it is now, one line: standing (and verdict when it fits), then the peers per state per
    group/version, folded to one segment when they all agree."""
    d = lead.diagnosis
    assert d is not None
    standing = STANDING_WORDS[d.standing]
    verdict = "" if d.verdict is None else f"{VERDICT_MARK[d.verdict.verdict]} {d.verdict.verdict.value} · "
    states = fold_peers(view.peers)
    if not states:
        return fitted(f"*Now:* {standing} · {verdict}", d.now, 1)
    candidates = []
    for words in (True, False):
        segments = state_segments(states, view.peers, words=words)
        for shown in range(len(segments), 0, -1):
            more = len(segments) - shown
            peers = " · ".join(segments[:shown]) + (f" · +{more} more" if more else "")
            candidates += [f"*Now:* {standing} · {verdict}{peers}", f"*Now:* {standing} · {peers}"]
    return next((c for c in candidates if lines_of(c) <= 1), fitted(f"*Now:* {standing} · ", d.now, 1))


def state_segments(
    states: list[PeerCacheState], readings: Sequence[PeerReading], *, words: bool
) -> list[str]:
    """One segment per peer state (`words`: spelled out when there is only one state)."""
    if len(states) == 1:
        return [f"{_counts(states[0], words=words)} on {_all_caches(readings)}"]
    # The legend once, then the caches of each state and their `h/q/o`.
    return [
        ("healthy/quarantined/half_open: " if i == 0 else "") + f"{_which(s.caches, readings)} {_counts(s)}"
        for i, s in enumerate(states)
    ]


def _counts(s: PeerCacheState, *, words: bool = False) -> str:
    synced = " unsynced" if s.synced is False else ""
    h, q, o = fmt_count(s.healthy), fmt_count(s.quarantined), fmt_count(s.half_open)
    if words:
        return f"healthy {h}, quarantined {q}, half_open {o}" + ("," + synced if synced else "")
    return f"{h}/{q}/{o}{synced}"


def _all_caches(readings: Sequence[PeerReading]) -> str:
    gvs = {r.group_version for r in readings}
    targets = {r.target for r in readings}
    replicas = {r.replica for r in readings if r.replica}
    if len(targets) > 1:
        where = f"all {len(readings)} peer caches of {len(targets)} targets"
    elif len(gvs) == 1:
        where = name(next(iter(gvs)))
    else:
        where = "both group/versions" if len(gvs) == 2 else f"all {len(gvs)} group/versions"
    return where + (f" of {len(replicas)} replicas" if len(replicas) > 1 else "")


def _which(caches: Sequence[PeerReading], readings: Sequence[PeerReading]) -> str:
    """The caches of one state, named by what sets them apart: whole replicas, whole targets, or else
    their group/versions."""
    mine = set(caches)
    keys: tuple[tuple[str, Callable[[PeerReading], str]], ...] = (
        ("replica", lambda r: r.replica or ""),
        ("target", lambda r: r.target),
    )
    for word, key in keys:
        values = sorted({key(r) for r in caches})
        if len({key(r) for r in readings}) > 1 and {r for r in readings if key(r) in values} == mine:
            return names(values, word)
    return names(sorted({r.group_version for r in caches}), "group/version")
