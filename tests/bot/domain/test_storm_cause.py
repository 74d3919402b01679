"""A storm's common cause: stated with its evidence only when every judged failing target shows it."""

from __future__ import annotations

from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain.findings import Severity
from bot.domain.storm import (
    SLOW_DIAL_SECONDS,
    CommonCause,
    StormCause,
    StormRow,
    TargetLive,
    TargetState,
    judge_cause,
)

SHAPE = CommonCause.CLIENT_CLUSTER
QUARANTINED = TargetLive(TargetState.NO_HEALTHY_QUARANTINED, True, None, 0, 2, 0)
UNSYNCED = TargetLive(TargetState.CACHE_UNSYNCED, False, None, 2, 0, 0)
NO_PEERS_UNSYNCED = TargetLive(TargetState.NO_PEERS, False)
HEALTHY = TargetLive(TargetState.HEALTHY, True, 0.01, 2, 0, 0)
NO_SERIES = TargetLive(TargetState.NO_SERIES)


def slow(p99: float) -> TargetLive:
    return TargetLive(TargetState.NO_HEALTHY_QUARANTINED, True, p99, 0, 1, 0)


def row(target: str, live: TargetLive, cluster: str = "team-a", *, resolved: bool = False) -> StormRow:
    return StormRow(cluster, target, (("A", 1),), Severity.CRITICAL, 0.0, live, resolved)


def rows(n: int, live: TargetLive, cluster: str = "team-a", start: int = 0) -> list[StormRow]:
    return [row(f"p/t{i:03}", live, cluster) for i in range(start, start + n)]


def test_every_failing_target_unsynced_behind_one_client_is_its_peer_feed() -> None:
    found = judge_cause([*rows(470, UNSYNCED), *rows(10, NO_PEERS_UNSYNCED, start=470)], SHAPE)
    assert found == StormCause(CommonCause.PEER_FEED, True, "team-a", None, 480, 480, 1)


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


lives = st.sampled_from([QUARANTINED, UNSYNCED, NO_PEERS_UNSYNCED, HEALTHY, NO_SERIES, slow(4.5), slow(4.9)])
storm_rows = st.lists(
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
@given(storm_rows, st.randoms(use_true_random=False))
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
    if cause.kind is CommonCause.NETWORK_PATH:
        assert all(r.live.dial_p99 is not None and r.live.dial_p99 >= SLOW_DIAL_SECONDS for r in judged)
    if cause.kind is CommonCause.ONE_TARGET and cause.evidence:
        assert {r.target for r in found if r.failing} == {cause.target}
    if cause.evidence:
        assert cause.judged > 0


@settings(max_examples=200, deadline=None)
@given(storm_rows, st.lists(st.sampled_from(["p/x", "p/y"]), max_size=5), st.booleans())
def test_targets_healthy_now_or_resolved_never_change_a_cause(
    found: list[StormRow], calm: list[str], resolved: bool
) -> None:
    cause = judge_cause(found, SHAPE)
    if not any(r.failing for r in found):
        return  # nothing failing: the calm ones are the whole story
    extra = [row(t, HEALTHY if not resolved else QUARANTINED, "c1", resolved=resolved) for t in calm]
    assert judge_cause([*found, *extra], SHAPE) == cause
