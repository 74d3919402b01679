"""The words enrichment adds to an alert's diagnosis: Prometheus' window, and why a read is missing."""

from __future__ import annotations

from bot.domain.diagnosis import diagnose_alert
from bot.domain.enrichment import PromOutcome, Unavailable
from bot.errors import UpstreamError
from bot.render.enrichment import evidence_lines, live_unavailable, prometheus_unavailable, with_prometheus
from tests.fakes.prom_windows import ASK, a_window


def test_evidence_is_labelled_with_its_window_and_source() -> None:
    window = a_window().window
    assert window is not None
    assert evidence_lines(window, "example.com/v1") == (
        "Requests by reason (last 15m, from Prometheus): upstream 900, no_peer 40",
        "Dial failures by reason (last 15m, from Prometheus): timeout 12",
        "p99 (last 15m, from Prometheus): requests 910 ms (942); dials: too few to tell (0)",
    )


def test_with_prometheus_adds_evidence_or_says_why_not() -> None:
    plain = diagnose_alert("ResourceProxyNoHealthyPeers", {"target": "team-a/db"}, None)
    enriched = with_prometheus(plain, a_window())
    assert enriched.now_evidence[: len(plain.now_evidence)] == plain.now_evidence
    assert any("from Prometheus" in line for line in enriched.now_evidence)
    missing = with_prometheus(plain, PromOutcome(ASK, None, Unavailable(5.0, late=True)))
    assert (
        missing.now_evidence[-1]
        == "Window counts (last 15m, from Prometheus): unavailable: took longer than 5s"
    )
    assert with_prometheus(plain, None) is plain


def test_a_missing_read_says_whether_it_was_late_cancelled_or_failed() -> None:
    assert live_unavailable(Unavailable(2.5, late=True)) == "enrichment took longer than 2.5s"
    assert live_unavailable(Unavailable(2.5)) == "the live read was cancelled"
    assert live_unavailable(Unavailable(2.5, error=OSError("x"))) == "the live read failed (OSError)"
    assert prometheus_unavailable(Unavailable(5.0, late=True)) == "took longer than 5s"
    assert prometheus_unavailable(Unavailable(5.0)) == "the read was cancelled"
    refused = UpstreamError("Prometheus refused the query: bad_data")
    assert prometheus_unavailable(Unavailable(5.0, error=refused)) == "Prometheus refused the query: bad_data"
    assert prometheus_unavailable(Unavailable(5.0, error=KeyError("x"))) == "KeyError"
