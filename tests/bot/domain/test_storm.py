"""Every target of a storm with its live state: one pass over a snapshot agrees with its own lookups.

A storm's common cause: stated with its evidence only when every judged failing target shows it.

A storm summary's content: counts worst first, targets grouped by live state per cluster, the cause.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain.delta import delta
from bot.domain.diagnosis_readings import Readings
from bot.domain.findings import Severity
from bot.domain.messages import Tally
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
    ClusterStates,
    CommonCause,
    StormCause,
    StormCounts,
    StormEntry,
    StormRow,
    StormView,
    TargetLive,
    TargetsRead,
    TargetState,
    judge_cause,
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


SHAPE = CommonCause.CLIENT_CLUSTER
QUARANTINED = TargetLive(TargetState.NO_HEALTHY_QUARANTINED, True, None, 0, 2, 0)
UNSYNCED = TargetLive(TargetState.CACHE_UNSYNCED, False, None, 2, 0, 0)
NO_PEERS_UNSYNCED = TargetLive(TargetState.NO_PEERS, False)
HEALTHY = TargetLive(TargetState.HEALTHY, True, 0.01, 2, 0, 0)


def slow(p99: float) -> TargetLive:
    return TargetLive(TargetState.NO_HEALTHY_QUARANTINED, True, p99, 0, 1, 0)


def row(target: str, live: TargetLive, cluster: str = "team-a", *, resolved: bool = False) -> StormRow:
    return StormRow(cluster, target, (("A", 1),), Severity.CRITICAL, 0.0, live, resolved)


def rows(n: int, live: TargetLive, cluster: str = "team-a", start: int = 0) -> list[StormRow]:
    return [row(f"p/t{i:03}", live, cluster) for i in range(start, start + n)]


def test_every_failing_target_unsynced_behind_one_client_is_its_peer_feed() -> None:
    found = judge_cause([*rows(470, UNSYNCED), *rows(10, NO_PEERS_UNSYNCED, start=470)], SHAPE)
    assert found == StormCause(CommonCause.PEER_FEED, True, "team-a", None, 480, 480, 1)


HUNG_UNSYNCED = TargetLive(TargetState.NO_HEALTHY_HALF_OPEN, False, 4.73, 0, 0, 1)


def test_behind_a_peer_feed_the_targets_also_down_on_their_own_are_named() -> None:
    hung = [row("p/shard-01", HUNG_UNSYNCED), row("p/shard-00", HUNG_UNSYNCED)]
    found = judge_cause([*rows(29, UNSYNCED), *hung, *rows(1, NO_PEERS_UNSYNCED, start=29)], SHAPE)
    assert (found.kind, found.failing, found.judged) == (CommonCause.PEER_FEED, 32, 32)
    # No peer listed is what a missing peer feed does; listed peers none of which answers is the target.
    assert found.down == ("p/shard-00", "p/shard-01")
    platform = judge_cause(
        [*rows(5, UNSYNCED, "a"), row("p/x", HUNG_UNSYNCED, "b"), *rows(2, UNSYNCED, "b")], SHAPE
    )
    assert (platform.kind, platform.via, platform.down) == (
        CommonCause.PLATFORM_PATH,
        CommonCause.PEER_FEED,
        ("p/x",),
    )


def test_targets_without_a_reading_are_counted_but_prove_nothing() -> None:
    found = judge_cause([*rows(480, UNSYNCED), *rows(20, NO_SERIES, start=480)], SHAPE)
    assert (found.kind, found.failing, found.judged) == (CommonCause.PEER_FEED, 500, 480)
    # With most failing targets unread there is no evidence, only the storm's shape.
    found = judge_cause([*rows(10, UNSYNCED), *rows(10, NO_SERIES, start=10)], SHAPE)
    assert (found.kind, found.evidence) == (SHAPE, False)


def test_every_failing_target_dialling_near_the_timeout_is_the_clients_network_path() -> None:
    found = judge_cause([row("p/a", slow(4.2)), row("p/b", slow(5.0)), row("p/c", HEALTHY)], SHAPE)
    assert (found.kind, found.cluster, found.dial_p99, found.judged) == (
        CommonCause.NETWORK_PATH,
        "team-a",
        (4.2, 5.0),
        2,
    )
    assert judge_cause([row("p/a", slow(4.2)), row("p/b", slow(1.0))], SHAPE).kind is SHAPE


def test_one_target_failing_from_several_clients_is_the_target() -> None:
    found = judge_cause([row("p/db", QUARANTINED, c) for c in ("a", "b", "c")], SHAPE)
    assert found == StormCause(CommonCause.ONE_TARGET, True, None, "p/db", 3, 3, 3)


def test_several_clients_each_with_their_peer_feed_down_is_the_platform() -> None:
    found = judge_cause([*rows(5, UNSYNCED, "a"), *rows(5, UNSYNCED, "b", start=5)], SHAPE)
    assert (found.kind, found.via, found.clusters, found.judged) == (
        CommonCause.PLATFORM_PATH,
        CommonCause.PEER_FEED,
        2,
        10,
    )
    mixed = judge_cause([*rows(5, UNSYNCED, "a"), *rows(5, QUARANTINED, "b", start=5)], SHAPE)
    assert (mixed.kind, mixed.evidence) == (SHAPE, False)


def test_nothing_failing_now_says_so_and_a_storm_all_resolved_keeps_its_shape() -> None:
    assert judge_cause(rows(3, HEALTHY), SHAPE).kind is CommonCause.HEALTHY_NOW
    assert judge_cause([row("p/a", QUARANTINED, resolved=True)], SHAPE).kind is SHAPE


lives = st.sampled_from(
    [QUARANTINED, UNSYNCED, NO_PEERS_UNSYNCED, HUNG_UNSYNCED, HEALTHY, NO_SERIES, slow(4.5), slow(4.9)]
)
row_lists = st.lists(
    st.builds(
        row,
        st.sampled_from(["p/a", "p/b", "p/c", "p/d"]),
        lives,
        st.sampled_from(["c1", "c2", "c3"]),
        resolved=st.booleans(),
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(row_lists, st.randoms(use_true_random=False))
def test_a_cause_rests_on_every_judged_failing_target_and_not_on_their_order(
    found: list[StormRow], rng: Random
) -> None:
    cause = judge_cause(found, SHAPE)
    shuffled = list(found)
    rng.shuffle(shuffled)
    assert judge_cause(shuffled, SHAPE) == cause
    failing = [r for r in found if r.failing and (cause.cluster is None or r.cluster == cause.cluster)]
    judged = [r for r in failing if r.live.state.judged]
    if cause.kind is CommonCause.PEER_FEED:
        assert judged
        assert all(r.live.synced is False for r in judged)
        assert 2 * len(judged) > len(failing)
        assert {r.cluster for r in found if r.failing} == {cause.cluster}
        assert cause.down == tuple(sorted({r.target for r in judged if r.live.state.down and r.target}))
    if cause.kind is CommonCause.NETWORK_PATH:
        assert all(r.live.dial_p99 is not None and r.live.dial_p99 >= SLOW_DIAL_SECONDS for r in judged)
    if cause.kind is CommonCause.ONE_TARGET and cause.evidence:
        assert {r.target for r in found if r.failing} == {cause.target}
    if cause.evidence:
        assert cause.judged > 0


@settings(max_examples=200, deadline=None)
@given(row_lists, st.lists(st.sampled_from(["p/x", "p/y"]), max_size=5), st.booleans())
def test_targets_healthy_now_or_resolved_never_change_a_cause(
    found: list[StormRow], calm: list[str], resolved: bool
) -> None:
    cause = judge_cause(found, SHAPE)
    if not any(r.failing for r in found):
        return  # nothing failing: the calm ones are the whole story
    extra = [row(t, HEALTHY if not resolved else QUARANTINED, "c1", resolved=resolved) for t in calm]
    assert judge_cause([*found, *extra], SHAPE) == cause


NOW = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def test_storm_tallies_worst_first_then_most() -> None:
    entries = (
        StormEntry("Warn", Severity.WARNING, "g1", "p/a", "c1"),
        StormEntry("Warn", Severity.WARNING, "g2", "p/b", "c1"),
        StormEntry("Warn", Severity.WARNING, "g2", "p/b", "c1"),
        StormEntry("Crit", Severity.CRITICAL, "g3", "p/a", "c2"),
    )
    storm = StormView(entries, NOW)
    assert storm.by_alert() == [Tally("Crit", 1, 1, Severity.CRITICAL), Tally("Warn", 3, 2, Severity.WARNING)]
    assert storm.by_target() == [Tally("p/a", 2, 1, Severity.CRITICAL), Tally("p/b", 2, 1, Severity.WARNING)]
    assert (storm.groups, storm.targets, storm.clusters) == (3, 2, 2)


def _entries(targets: int, clusters: int) -> list[StormEntry]:
    return [StormEntry("A", Severity.WARNING, f"g{i}", f"p/t{i}", f"c{i % clusters}") for i in range(targets)]


def test_the_cause_suspected_from_the_storms_shape() -> None:
    assert StormCounts(_entries(5, 2)).shape_cause() is CommonCause.PLATFORM_PATH
    assert StormCounts(_entries(5, 1)).shape_cause() is CommonCause.CLIENT_CLUSTER
    assert StormCounts(_entries(1, 1) * 3).shape_cause() is CommonCause.ONE_TARGET
    assert StormCounts(_entries(2, 2)).shape_cause() is CommonCause.UNCLEAR
    assert StormCounts([]).shape_cause() is CommonCause.UNCLEAR
    # Without live rows the view only suspects.
    cause = StormView(tuple(_entries(5, 1)), NOW).common_cause()
    assert (cause.kind, cause.evidence) == (CommonCause.CLIENT_CLUSTER, False)


def test_targets_are_grouped_by_live_state_per_cluster_worst_first() -> None:
    entries = [StormEntry("A", Severity.CRITICAL, f"g{i}", f"p/t{i:02}", "c0") for i in range(30)]
    entries += [StormEntry("A", Severity.CRITICAL, "b", "p/b", "c1", since=1.0, ended=2.0)]
    lives = {f"p/t{i:02}": QUARANTINED for i in range(20)}
    lives |= {f"p/t{i:02}": UNSYNCED for i in range(20, 25)}
    rows = storm_rows(entries, {"c0": TargetsRead(lives), "c1": TargetsRead({"p/b": UNSYNCED})})
    storm = StormView.of(StormCounts(entries), NOW, None, rows)
    [c0, c1] = storm.by_cluster()
    assert c0 == ClusterStates(
        "c0",
        30,
        (
            (TargetState.NO_HEALTHY_QUARANTINED, 20),
            (TargetState.CACHE_UNSYNCED, 5),
            (TargetState.NO_SERIES, 5),
        ),
        0,
        None,  # neither the peer feed nor the path explains every judged target
    )
    assert (c1.targets, c1.states, c1.resolved) == (1, (), 1)


def test_the_signature_changes_with_what_the_summary_shows_and_only_then() -> None:
    entries = _entries(12, 1)
    rows = storm_rows(entries, {"c0": TargetsRead({"p/t0": QUARANTINED})})
    one = StormView.of(StormCounts(entries), NOW, None, rows)
    assert one.signature() == StormView.of(StormCounts(entries), NOW, None, rows).signature()
    more = [*entries, StormEntry("A", Severity.WARNING, "g99", "p/t99", "c0")]
    assert StormView.of(StormCounts(more), NOW, None, rows).signature() != one.signature()
    moved = storm_rows(entries, {"c0": TargetsRead({"p/t0": UNSYNCED})})
    assert StormView.of(StormCounts(entries), NOW, None, moved).signature() != one.signature()


def test_a_storm_is_resolved_once_every_alert_ended() -> None:
    firing = StormEntry("A", Severity.WARNING, "g1", "p/a", "c0", since=1.0)
    ended = StormEntry("A", Severity.WARNING, "g1", "p/a", "c0", since=1.0, ended=5.0)
    counts = StormCounts([firing, ended])
    assert (counts.alerts, counts.firing, StormView.of(counts, NOW).resolved) == (2, 1, False)
    counts.remove(firing)
    assert StormView.of(counts, NOW).resolved
    assert not StormView.of(StormCounts(), NOW).resolved


def test_an_alert_without_a_target_is_its_own_row_and_no_target_of_the_cluster() -> None:
    found = [*_entries(3, 1), StormEntry("ResourceProxyProbeFailing", Severity.CRITICAL, "p", None, "c0")]
    rows = storm_rows(found, {"c0": TargetsRead({})})
    [c0] = StormView.of(StormCounts(found), NOW, None, rows).by_cluster()
    assert c0.targets == 3
    assert c0.states == ((TargetState.NO_SERIES, 3), (TargetState.NO_TARGET, 1))
