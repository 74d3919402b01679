"""The digest's charts: one with nothing to show is said in words, never posted; counts on whole numbers."""

from __future__ import annotations

from bot.clients.prometheus import Series
from bot.digest.history import PEERS_CHART, REASONS_CHART, charts_from_prometheus, charts_from_samples
from bot.domain.digest import Digest, Health, TargetDigest
from bot.render.chart import Chart
from bot.render.digest import chart_pngs, digest_message
from bot.render.terminal import show
from bot.store.digests import FleetSample

DAY = 86400.0
END = 1_700_000_000.0
DOWN = TargetDigest("platform/crd-store", "team-a", Health.DEGRADED, healthy_peers=0.0)


def sample(at: float, peers: float, faults: dict[str, float]) -> FleetSample:
    return FleetSample(at, {"targets": {DOWN.target: {"h": peers, "s": "degraded"}}, "faults": faults})


def charts(*samples: FleetSample) -> dict[str, Chart]:
    found = charts_from_samples(Digest("p", END, (DOWN,)), samples, DAY)
    return {c.key: c for c in found}


def test_a_day_without_a_failing_request_is_said_not_charted() -> None:
    quiet = [sample(END - DAY + 3600 * i, 2.0, {"all_quarantined": 7.0}) for i in range(25)]
    found = charts(*quiet)
    assert found[REASONS_CHART].absent == "No failing requests in the last 24 h."
    assert found[PEERS_CHART].absent is None
    posted = chart_pngs(list(found.values()))
    assert [p.filename for p in posted] == ["digest-healthy-peers.png"]
    gone = TargetDigest("team-b/db", "team-b", Health.UNREACHABLE, unavailable="timed out")
    for digest in (Digest("p", END, ()), Digest("p", END, (gone,))):  # quiet, and not
        text = show(digest_message(digest, charts=list(found.values())))
        assert "No failing requests in the last 24 h." in text
        assert "Healthy peers" not in text  # its chart is posted


def test_one_reading_is_not_a_chart_and_never_reads_as_no_failures() -> None:
    # The demo's first digest: one sample of a proxy that has answered 503s since it started.
    found = charts(sample(END, 0.0, {"all_quarantined": 41.0}))
    assert found[REASONS_CHART].absent == (
        "Failing requests not charted: 1 reading in the last 24 h, a rate needs two."
    )
    assert (
        found[PEERS_CHART].absent
        == "Healthy peers not charted: 1 reading in the last 24 h, a line needs two."
    )
    assert chart_pngs(list(found.values())) == []


def test_failing_requests_between_two_readings_are_charted() -> None:
    found = charts(
        sample(END - 600, 0.0, {"all_quarantined": 1.0}), sample(END, 0.0, {"all_quarantined": 31.0})
    )
    assert found[REASONS_CHART].absent is None
    # 30 more in 10 minutes: 3 a minute over those 10 minutes, a line and not a dot at the edge.
    assert found[REASONS_CHART].lines[0].points == ((END - 600, 3.0), (END, 3.0))
    assert found[PEERS_CHART].absent is None


def test_healthy_peers_are_a_count() -> None:
    found = charts(sample(END - 600, 0.0, {}), sample(END, 0.0, {}))
    assert found[PEERS_CHART].counts
    assert not found[REASONS_CHART].counts  # requests per minute is a rate


class Prometheus:
    def __init__(self, peers: list[Series], reasons: list[Series]) -> None:
        self.answers = {"min by": peers, "sum by": reasons}

    async def query_range(
        self, expr: str, *, start: float, end: float, step: float, timeout: float | None = None
    ) -> list[Series]:
        return next(answer for prefix, answer in self.answers.items() if expr.startswith(prefix))


async def test_prometheus_with_no_failing_request_is_said_too() -> None:
    points = tuple((END - DAY + 600 * i, 0.0) for i in range(145))
    peers = [Series({"target": DOWN.target}, points)]
    zero = [Series({"reason": "all_quarantined"}, points)]
    found = await charts_from_prometheus(Digest("p", END, (DOWN,)), Prometheus(peers, zero), DAY)
    assert [c.absent for c in found] == [None, "No failing requests in the last 24 h."]
    assert found[0].counts
