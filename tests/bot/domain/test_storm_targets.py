"""Every target of a storm with its live state: one pass over a snapshot agrees with its own lookups."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain.delta import delta
from bot.domain.diagnosis_readings import Readings
from bot.domain.findings import Severity
from bot.domain.parser import parse_syncer
from bot.domain.snapshot import (
    DIAL_DURATION,
    PEER_CACHE_SYNCED,
    PEERS,
    Bucket,
    Histogram,
    PeerCounts,
    ProxySnapshot,
)
from bot.domain.storm import (
    NO_SERIES,
    SLOW_DIAL_SECONDS,
    StormEntry,
    TargetLive,
    TargetsRead,
    TargetState,
    live_by_target,
    storm_rows,
)

GV, GV2 = "example.com/v1", "data.example.com/v1alpha1"
LES = (0.1, 1.0, 2.5, 5.0, math.inf)


def peers(target: str, gv: str, healthy: float, quarantined: float, half_open: float = 0.0) -> str:
    where = f'target="{target}",group_version="{gv}"'
    return "".join(
        f'vcluster_proxy_peers{{{where},state="{s}"}} {n}\n'
        for s, n in (("healthy", healthy), ("quarantined", quarantined), ("half_open", half_open))
    )


def synced(target: str, gv: str, value: int) -> str:
    return f'vcluster_proxy_peer_cache_synced{{target="{target}",group_version="{gv}"}} {value}\n'


def dials(target: str, counts: tuple[int, ...]) -> str:
    """A dial histogram with cumulative `counts` per bucket of LES."""
    name = DIAL_DURATION
    lines = [
        f'{name}_bucket{{target="{target}",le="{"+Inf" if le == math.inf else le}"}} {n}\n'
        for le, n in zip(LES, counts, strict=True)
    ]
    lines.append(f'{name}_count{{target="{target}"}} {counts[-1]}\n{name}_sum{{target="{target}"}} 1\n')
    return "".join(lines)


def live(page: str) -> dict[str, TargetLive]:
    return live_by_target(parse_syncer(page))


def test_each_state_from_what_the_proxy_reports() -> None:
    found = live(
        peers("p/quarantined", GV, 0, 2)
        + synced("p/quarantined", GV, 1)
        + peers("p/trial", GV, 0, 1, 1)
        + peers("p/empty", GV, 0, 0)
        + synced("p/empty", GV, 0)
        + peers("p/stale", GV, 2, 0)
        + synced("p/stale", GV, 0)
        + peers("p/slow", GV, 1, 0)
        + dials("p/slow", (0, 0, 0, 200, 200))
        + peers("p/fine", GV, 2, 0)
        + synced("p/fine", GV, 1)
        + peers("p/fine", GV2, 1, 1)
    )
    assert {t: v.state for t, v in found.items()} == {
        "p/quarantined": TargetState.NO_HEALTHY_QUARANTINED,
        "p/trial": TargetState.NO_HEALTHY_HALF_OPEN,
        "p/empty": TargetState.NO_PEERS,
        "p/stale": TargetState.CACHE_UNSYNCED,
        "p/slow": TargetState.SLOW_DIALS,
        "p/fine": TargetState.HEALTHY,
    }
    assert found["p/empty"].synced is False  # kept beside the worse state, for the cause
    slow = found["p/slow"].dial_p99
    assert slow is not None
    assert SLOW_DIAL_SECONDS <= slow <= 5.0
    assert (found["p/fine"].healthy, found["p/fine"].quarantined) == (1, 1)  # the worst group/version


def test_a_window_judges_the_dials_of_the_window_only() -> None:
    fast = 100_000
    before = parse_syncer(peers("p/a", GV, 1, 0) + dials("p/a", (fast,) * 5))
    after = parse_syncer(peers("p/a", GV, 1, 0) + dials("p/a", (fast, fast, fast, fast + 100, fast + 100)))
    window = delta(before, after, 60.0)
    assert live_by_target(after)["p/a"].state is TargetState.HEALTHY  # p99 over all time: fast enough
    assert live_by_target(after, window)["p/a"].state is TargetState.SLOW_DIALS


targets = st.sampled_from(["p/a", "p/b", "p/c"])
gvs = st.sampled_from([GV, GV2])
counts = st.integers(0, 3).map(float)
peer_samples = st.dictionaries(
    st.tuples(targets, gvs, st.sampled_from(["healthy", "quarantined", "half_open"])), counts, max_size=12
)
synced_samples = st.dictionaries(st.tuples(targets, gvs), st.sampled_from([0.0, 1.0]), max_size=6)
dial_samples = st.dictionaries(
    st.tuples(targets, gvs),
    st.lists(st.integers(0, 30), min_size=len(LES), max_size=len(LES)),
    max_size=4,
)


def snapshot_of(
    peer: dict[tuple[str, str, str], float],
    sync: dict[tuple[str, str], float],
    dial: dict[tuple[str, str], list[int]],
) -> ProxySnapshot:
    def labels(**pairs: str) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(pairs.items()))

    histograms = {}
    for (t, gv), steps in dial.items():
        cumulative = [sum(steps[: i + 1]) for i in range(len(steps))]
        buckets = tuple(Bucket(le, float(n)) for le, n in zip(LES, cumulative, strict=True))
        histograms[labels(target=t, group_version=gv)] = Histogram(buckets, float(cumulative[-1]), 0.0)
    return ProxySnapshot(
        samples={
            PEERS: {labels(target=t, group_version=gv, state=s): v for (t, gv, s), v in peer.items()},
            PEER_CACHE_SYNCED: {labels(target=t, group_version=gv): v for (t, gv), v in sync.items()},
        },
        histograms={DIAL_DURATION: histograms},
    )


def expected(snapshot: ProxySnapshot, target: str) -> TargetLive:
    """The state read target by target through the snapshot's own lookups, as the docstring says."""
    gvs = snapshot.group_versions(target)
    per_gv = [(gv, c) for gv in gvs if (c := snapshot.peers(target, gv)) is not None]
    flags = [f for gv in gvs if (f := snapshot.cache_synced(target, gv)) is not None]
    is_synced = None if not flags else all(flags)
    p99 = Readings(snapshot, None, target).p99(snapshot.histogram(DIAL_DURATION, target=target))

    def peer_state(c: PeerCounts) -> TargetState:
        if c.healthy > 0:
            return TargetState.HEALTHY
        if c.half_open > 0:
            return TargetState.NO_HEALTHY_HALF_OPEN
        return TargetState.NO_HEALTHY_QUARANTINED if c.quarantined > 0 else TargetState.NO_PEERS

    order = list(TargetState)
    worst = min(per_gv, key=lambda p: (order.index(peer_state(p[1])), p[1].healthy, p[0]), default=None)
    state = TargetState.HEALTHY if worst is None else peer_state(worst[1])
    if state is TargetState.HEALTHY and is_synced is False:
        state = TargetState.CACHE_UNSYNCED
    elif state is TargetState.HEALTHY and p99 is not None and p99 >= SLOW_DIAL_SECONDS:
        state = TargetState.SLOW_DIALS
    if worst is None:
        return TargetLive(state, is_synced, p99)
    c = worst[1]
    return TargetLive(state, is_synced, p99, c.healthy, c.quarantined, c.half_open)


@settings(max_examples=200, deadline=None)
@given(peer_samples, synced_samples, dial_samples)
def test_one_pass_agrees_with_the_snapshots_own_lookups(
    peer: dict[tuple[str, str, str], float],
    sync: dict[tuple[str, str], float],
    dial: dict[tuple[str, str], list[int]],
) -> None:
    snapshot = snapshot_of(peer, sync, dial)
    found = live_by_target(snapshot)
    assert set(found) == set(snapshot.targets())
    for target in snapshot.targets():
        assert found[target] == expected(snapshot, target)


entries = st.lists(
    st.builds(
        StormEntry,
        st.sampled_from(["A", "B"]),
        st.sampled_from(Severity),
        st.sampled_from(["g1", "g2", "g3"]),
        st.one_of(st.none(), targets),
        st.one_of(st.none(), st.sampled_from(["c1", "c2"])),
        st.one_of(st.none(), st.floats(0, 1e9)),
        st.one_of(st.none(), st.floats(0, 1e9)),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(entries, st.booleans())
def test_every_place_of_the_storm_is_one_row_and_every_alert_is_counted_once(
    found: list[StormEntry], c1_read: bool
) -> None:
    reads = {"c1": TargetsRead({"p/a": NO_SERIES}) if c1_read else TargetsRead(None, "timed out")}
    rows = storm_rows(found, reads)
    assert sorted((r.cluster or "", r.target or "") for r in rows) == sorted(
        {(e.cluster or "", e.target or "") for e in found}
    )
    assert sum(n for r in rows for _, n in r.alerts) == len(found)
    for row in rows:
        mine = [e for e in found if (e.cluster, e.target) == (row.cluster, row.target)]
        assert row.worst == max(e.severity for e in mine)
        assert row.resolved == all(e.ended is not None for e in mine)
        assert row.since == min((e.since for e in mine if e.since is not None), default=None)
        if row.target is None:
            assert row.live.state is TargetState.NO_TARGET
        elif row.cluster != "c1" or not c1_read:
            assert row.live.state is TargetState.NOT_READ
            assert row.unread


def test_rows_are_listed_per_cluster_firing_worst_first() -> None:
    found = [
        StormEntry("A", Severity.WARNING, "g", t, "c1", ended=9.0 if t == "p/z" else None)
        for t in ("p/z", "p/healthy", "p/bad", "p/unknown")
    ]
    lives = {"p/healthy": TargetLive(TargetState.HEALTHY), "p/bad": TargetLive(TargetState.NO_PEERS)}
    rows = storm_rows(found, {"c1": TargetsRead(lives | {"p/z": TargetLive(TargetState.NO_PEERS)})})
    assert [r.target for r in rows] == ["p/bad", "p/unknown", "p/healthy", "p/z"]
    assert [r.failing for r in rows] == [True, True, False, False]
