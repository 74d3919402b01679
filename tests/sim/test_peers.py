"""The guide's constants, walked on a fake clock: quarantine, trial dial, staleness."""

from __future__ import annotations

from sim.clock import FakeClock
from sim.names import PeerState, Reason
from sim.peers import PeerCache


def _cache() -> tuple[FakeClock, PeerCache]:
    clock = FakeClock()
    cache = PeerCache(clock, "example.com/v1")
    cache.publish(["a.vcluster.invalid"])
    return clock, cache


def test_third_consecutive_failure_quarantines_not_the_second() -> None:
    _, cache = _cache()
    host = cache.hosts["a.vcluster.invalid"]
    assert not cache.record_failure(host).quarantined
    assert not cache.record_failure(host).quarantined
    outcome = cache.record_failure(host)
    assert outcome.quarantined
    assert outcome.left_none_selectable
    assert cache.state_counts()[PeerState.QUARANTINED] == 1
    assert cache.availability() is Reason.ALL_QUARANTINED


def test_quarantine_lasts_20_seconds_then_allows_exactly_one_trial() -> None:
    clock, cache = _cache()
    host = cache.hosts["a.vcluster.invalid"]
    for _ in range(3):
        cache.record_failure(host)
    clock.advance(19.9)
    assert cache.choose(0) is None
    clock.advance(0.1)
    assert cache.state_counts()[PeerState.HALF_OPEN] == 1
    assert cache.choose(0) is host
    # The only candidate is mid-trial: nothing else may be selected.
    assert cache.choose(0) is None
    assert cache.availability() is Reason.ALL_QUARANTINED


def test_failed_trial_requarantines_and_success_recovers() -> None:
    clock, cache = _cache()
    host = cache.hosts["a.vcluster.invalid"]
    for _ in range(3):
        cache.record_failure(host)
    clock.advance(20)
    cache.choose(0)
    assert cache.record_failure(host).quarantined
    clock.advance(20)
    cache.choose(0)
    assert cache.record_success(host).recovered
    assert cache.state_counts() == {PeerState.HEALTHY: 1, PeerState.QUARANTINED: 0, PeerState.HALF_OPEN: 0}


def test_healthy_sibling_keeps_a_peer_selectable() -> None:
    _, cache = _cache()
    cache.publish(["a.vcluster.invalid", "b.vcluster.invalid"])
    host = cache.hosts["a.vcluster.invalid"]
    for _ in range(2):
        cache.record_failure(host)
    outcome = cache.record_failure(host)
    assert outcome.quarantined
    assert not outcome.left_none_selectable


def test_cache_goes_stale_60_seconds_after_the_watch_drops() -> None:
    clock, cache = _cache()
    clock.advance(500)  # a quiet list grows old without being stale
    assert cache.synced()
    cache.drop_subscription()
    clock.advance(60)
    assert cache.synced()
    clock.advance(0.5)
    assert not cache.synced()
    assert cache.availability() is Reason.STALE_PEERS


def test_restored_watch_relists_and_resets_staleness() -> None:
    clock, cache = _cache()
    cache.drop_subscription()
    clock.advance(90)
    cache.restore_subscription(["c.vcluster.invalid"])
    assert cache.synced()
    assert list(cache.hosts) == ["c.vcluster.invalid"]
    assert cache.list_age() == 0


def test_never_listed_is_no_peer_and_unsynced() -> None:
    cache = PeerCache(FakeClock(), "example.com/v1")
    assert cache.availability() is Reason.NO_PEER
    assert not cache.synced()
    assert cache.list_age() is None


def test_empty_list_is_synced_but_no_peer() -> None:
    cache = PeerCache(FakeClock(), "example.com/v1")
    cache.publish([])
    assert cache.synced()
    assert cache.availability() is Reason.NO_PEER
