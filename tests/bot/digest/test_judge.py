"""The digest's content from the clusters' reads: health worst first, changes and reasons moved, quiet."""

from __future__ import annotations

from bot.digest.fleet import ClusterOutcome
from bot.digest.judge import assemble_digest, judge_reads
from bot.domain.digest import Health
from bot.domain.snapshot import PEER_CACHE_SYNCED, PEERS, ProxySnapshot
from bot.live import ClusterRead
from tests.fakes.fleet import fleet, snapshot


def reads(**snapshots: ProxySnapshot | None) -> dict[str, ClusterOutcome]:
    """Each cluster's read as `read_fleet` gives it (None: the cluster refused), 0.1 s each."""
    outcomes = {}
    for name, snap in snapshots.items():
        why = None if snap is not None else f"cluster {name}: forbidden"
        outcomes[name] = ClusterOutcome(ClusterRead(name, 1000.0, snap, None, why), 0.1)
    return outcomes


def test_judge_reads_keeps_configuration_order_and_each_clusters_cost() -> None:
    settings = fleet(("b", ["p/b1", "p/b2"]), ("a", "p/a"))
    judged, seconds = judge_reads(settings.clusters, reads(a=snapshot("p/a", 2), b=None))
    assert [(t.cluster, t.target) for t in judged] == [("b", "p/b1"), ("b", "p/b2"), ("a", "p/a")]
    assert [t.health for t in judged] == [Health.UNREACHABLE, Health.UNREACHABLE, Health.HEALTHY]
    assert judged[0].unavailable == "cluster b: forbidden"
    assert seconds == {"a": 0.1, "b": 0.1}


def test_health_worst_first_with_findings_and_next_steps() -> None:
    settings = fleet(("a", ["p/ok"]), ("b", ["p/down"]), ("c", ["p/gone"]))
    outcomes = reads(a=snapshot("p/ok", 2), b=snapshot("p/down", 0, failures=7), c=None)
    d = assemble_digest(*judge_reads(settings.clusters, outcomes), period="p", at=1000.0)
    assert [(t.target, t.health) for t in d.targets] == [
        ("p/gone", Health.UNREACHABLE),
        ("p/down", Health.DEGRADED),
        ("p/ok", Health.HEALTHY),
    ]
    down = d.targets[1]
    assert down.findings
    assert down.findings[0].next_step
    assert down.healthy_peers == 0.0
    assert not d.quiet
    assert d.changes == ()  # no previous digest: nothing to compare with
    assert d.cluster_seconds == {"a": 0.1, "b": 0.1, "c": 0.1}


def test_changes_and_reasons_moved_since_the_previous_digest() -> None:
    clusters = fleet(("a", ["p/x"])).clusters
    first = assemble_digest(*judge_reads(clusters, reads(a=snapshot("p/x", 2, 3))), period="1", at=1.0)
    second = assemble_digest(
        *judge_reads(clusters, reads(a=snapshot("p/x", 0, 10))),
        period="2",
        at=2.0,
        previous=first.summary(),
        previous_at=1.0,
    )
    assert [(c.before, c.after) for c in second.changes] == [(first.targets[0].health, Health.DEGRADED)]
    moved = [(m.reason, m.count, m.since_last_digest) for m in second.moved if m.family == "request"]
    assert moved == [("all_quarantined", 7.0, True)]


def test_all_healthy_is_quiet() -> None:
    clusters = fleet(("a", ["p/x", "p/y"])).clusters
    both = {**snapshot("p/x", 2).samples[PEERS], **snapshot("p/y", 2).samples[PEERS]}
    synced = {
        **snapshot("p/x", 2).samples[PEER_CACHE_SYNCED],
        **snapshot("p/y", 2).samples[PEER_CACHE_SYNCED],
    }
    outcomes = reads(a=ProxySnapshot(samples={PEERS: both, PEER_CACHE_SYNCED: synced}))
    d = assemble_digest(*judge_reads(clusters, outcomes), period="p", at=1.0)
    assert d.count(Health.HEALTHY) == 2
    assert d.quiet
