"""The impact of a firing window from the bot's own readings: baseline, increases, resets, peaks."""

from __future__ import annotations

from bot.domain.impact import ImpactSource, ImpactTally, failed, sample
from bot.domain.parser import parse_syncer

T = "team-a/db"


def page(
    failures: dict[tuple[str, str], float], ok: float = 100.0, quarantined: int = 0, synced: int = 1
) -> str:
    lines = ["# TYPE vcluster_proxy_request_total counter"]
    lines.append(
        f'vcluster_proxy_request_total{{target="{T}",group_version="example.com/v1",verb="get",code="200",'
        f'reason="upstream"}} {ok}'
    )
    for (code, reason), n in failures.items():
        lines.append(
            f'vcluster_proxy_request_total{{target="{T}",group_version="example.com/v1",verb="get",'
            f'code="{code}",reason="{reason}"}} {n}'
        )
    # Another target's failures never count for this group.
    lines.append(
        'vcluster_proxy_request_total{target="team-b/queue",group_version="example.com/v1",verb="get",'
        'code="503",reason="no_peer"} 1000'
    )
    peers = f'vcluster_proxy_peers{{target="{T}",group_version="example.com/v1"'
    lines += [
        "# TYPE vcluster_proxy_peers gauge",
        f'{peers},state="healthy"}} {2 - quarantined}',
        f'{peers},state="quarantined"}} {quarantined}',
        f'{peers},state="half_open"}} 0',
        "# TYPE vcluster_proxy_peer_cache_synced gauge",
        f'vcluster_proxy_peer_cache_synced{{target="{T}",group_version="example.com/v1"}} {synced}',
    ]
    return "\n".join(lines) + "\n"


def fold(*pages: str, source: str = "alpha") -> ImpactTally:
    tally = ImpactTally()
    for i, text in enumerate(pages):
        tally = tally.fold(sample(source, float(i), parse_syncer(text), [T]))
    return tally


def test_the_first_reading_is_the_baseline_and_counts_nothing() -> None:
    tally = fold(page({("503", "no_peer"): 40}))
    assert tally.failed == {}
    assert tally.readings == 1


def test_failed_requests_are_the_increase_of_every_status_from_400_by_status_and_reason() -> None:
    tally = fold(
        page({("503", "no_peer"): 40}, ok=100),
        page({("503", "no_peer"): 52, ("404", "ownership_masked"): 3}, ok=180),
    )
    # 200s never count; a series first seen after the baseline counted its first events in between.
    assert tally.failed == {("503", "no_peer"): 12, ("404", "ownership_masked"): 3}
    assert tally.resets == 0
    assert tally.impact().total_failed == 15


def test_a_counter_that_went_down_counted_from_zero() -> None:
    tally = fold(
        page({("503", "no_peer"): 40}),
        page({("503", "no_peer"): 50}),
        page({("503", "no_peer"): 7}),  # the pod restarted: 7 since the restart
        page({("503", "no_peer"): 9}),
    )
    assert tally.failed == {("503", "no_peer"): 10 + 7 + 2}
    assert tally.resets == 1
    impact = tally.impact()
    assert impact.source is ImpactSource.READINGS
    assert impact.resets == 1


def test_each_source_has_its_own_baseline() -> None:
    tally = ImpactTally()
    tally = tally.fold(sample("alpha/pod-0", 0.0, parse_syncer(page({("503", "no_peer"): 40})), [T]))
    tally = tally.fold(sample("alpha/pod-1", 1.0, parse_syncer(page({("503", "no_peer"): 900})), [T]))
    tally = tally.fold(sample("alpha/pod-0", 2.0, parse_syncer(page({("503", "no_peer"): 45})), [T]))
    assert tally.failed == {("503", "no_peer"): 5}


def test_peaks_of_quarantined_peers_and_unsynced_caches_over_the_readings() -> None:
    tally = fold(page({}, quarantined=1), page({}, quarantined=2, synced=0), page({}, quarantined=0))
    assert tally.peak_quarantined == 2
    assert tally.peak_unsynced == 1


def test_failed_codes() -> None:
    assert failed("404")
    assert failed("503")
    assert failed("501")
    assert not failed("200")
    assert not failed("304")
    assert not failed("")
