"""Traffic findings (bot/domain/diagnosis_traffic.py): request reasons, terminations, dials, discovery."""

from __future__ import annotations

import pytest

from bot.domain.findings import Severity
from bot.domain.snapshot import (
    DISCOVERY_FALLBACKS,
    TERMINATIONS,
)
from tests.bot.domain.diagnosis_pages import GV, GV2, key, moved, one

# -- request reasons, one per guide reason -------------------------------------------------------------

# reason, code, expected severity, a word the title must carry
REQUEST_REASONS = [
    ("no_peer", "503", Severity.WARNING, "proxy path"),
    ("stale_peers", "503", Severity.WARNING, "proxy path"),
    ("all_quarantined", "503", Severity.WARNING, "proxy path"),
    ("timeout", "503", Severity.WARNING, "proxy path"),
    ("deadline", "504", Severity.WARNING, "proxy path"),
    ("canceled", "499", Severity.INFO, "not a proxy fault"),
    ("peer_departed", "503", Severity.WARNING, "proxy path"),
    ("ts_server_unavailable", "503", Severity.WARNING, "proxy path"),
    ("error", "503", Severity.WARNING, "proxy path"),
    ("ownership_masked", "404", Severity.INFO, "isolation working"),
    ("ownership_check_failed", "503", Severity.WARNING, "proxy path"),
    ("namespace_missing", "404", Severity.INFO, "not a proxy fault"),
    ("upgrade_rejected", "501", Severity.INFO, "not a proxy fault"),
    ("upstream_error", "200", Severity.INFO, "target"),
    ("upstream", "500", Severity.INFO, "target"),
    ("reason_from_the_future", "503", Severity.INFO, "unknown"),
]


@pytest.mark.parametrize(("reason", "code", "severity", "word"), REQUEST_REASONS)
def test_each_request_reason_that_moved_is_explained(
    reason: str, code: str, severity: Severity, word: str
) -> None:
    found = moved(lambda p: p.requests(90, "upstream").requests(10, reason, code))
    f = one(found, key("request_reason", GV, reason))
    assert f.severity is severity
    assert word in f.title
    assert f.reason == reason
    assert any("10 of 100 requests (10.0 %)" in e for e in f.evidence)
    assert any(code in e for e in f.evidence)


def test_target_answers_that_succeeded_are_not_findings() -> None:
    found = moved(lambda p: p.requests(500, "upstream", "200").requests(3, "upstream", "404"))
    assert [f.key for f in found] == [key("healthy")]


def test_ownership_masked_is_isolation_and_not_a_fault() -> None:
    f = one(
        moved(lambda p: p.requests(25, "ownership_masked", "404")),
        key("request_reason", GV, "ownership_masked"),
    )
    assert f.severity is Severity.INFO
    assert "isolation" in f.cause.lower()
    assert "ownership labels" in f.next_step


def test_reasons_are_kept_per_group_version() -> None:
    found = moved(lambda p: p.requests(5, "no_peer", "503", gv=GV2))
    assert key("request_reason", GV2, "no_peer") in {f.key for f in found}
    assert key("request_reason", GV, "no_peer") not in {f.key for f in found}


# -- terminations, dials, discovery ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "severity", "word"),
    [("deadline", Severity.WARNING, "60 s"), ("upgrade_rejected", Severity.INFO, "501")],
)
def test_terminations(reason: str, severity: Severity, word: str) -> None:
    found = moved(lambda p: p.add(TERMINATIONS, 4, reason=reason).requests(4, reason, "503"))
    f = one(found, key("termination", None, reason))
    assert (f.severity, word in f.title) == (severity, True)
    # The same requests are not reported twice through request_total.
    assert key("request_reason", GV, reason) not in {x.key for x in found}


def test_dial_failures_by_reason_lead_with_the_proxy_side_one() -> None:
    f = one(moved(lambda p: p.dial_failures(9, "canceled").dial_failures(4, "timeout")), key("dial_failures"))
    assert f.severity is Severity.WARNING
    assert "timeout" in f.title
    assert "canceled 9" in f.evidence[0]
    assert "timeout 4" in f.evidence[0]
    assert "peer list is current" in f.next_step  # the timeout reason's step


def test_dial_failures_from_canceled_callers_only_are_not_a_proxy_fault() -> None:
    f = one(moved(lambda p: p.dial_failures(6, "canceled")), key("dial_failures"))
    assert f.severity is Severity.INFO
    assert "not a proxy fault" in f.title


@pytest.mark.parametrize(
    ("reason", "step_word"), [("all_quarantined", "probe"), ("upstream_error", "CRD"), ("no_peer", "probe")]
)
def test_trap_discovery_fallback_answers_200_while_requests_fail(reason: str, step_word: str) -> None:
    found = moved(lambda p: p.add(DISCOVERY_FALLBACKS, 6, group_version=GV, reason=reason))
    f = one(found, key("discovery_fallback", GV))
    assert f.severity is Severity.WARNING
    assert "200" in f.title
    assert "APIService" in f.title
    assert step_word in f.next_step
    assert f.alert == "ResourceProxyDiscoveryDegraded"


def test_upstream_error_on_requests_is_reported_once_by_the_discovery_finding() -> None:
    found = moved(
        lambda p: p.add(DISCOVERY_FALLBACKS, 2, group_version=GV, reason="upstream_error").requests(
            2, "upstream_error", "200"
        )
    )
    assert key("discovery_fallback", GV) in {f.key for f in found}
    assert key("request_reason", GV, "upstream_error") not in {f.key for f in found}


def test_a_discovery_fallback_after_a_failed_dial_blames_the_path_not_the_crd() -> None:
    """loft-sh/vcluster-docs manage/resource-proxy-operations.mdx, "Outcome reasons": upstream_error can be a
    transport failure turned into a 5xx after the peer check, and request_total keeps the dial's reason
    (the first wins): a licence or network-server failure is not a missing CRD."""
    found = moved(
        lambda p: p.add(DISCOVERY_FALLBACKS, 2, group_version=GV, reason="upstream_error").requests(
            2, "ts_server_unavailable", "200"
        )
    )
    f = one(found, key("discovery_fallback", GV))
    assert "ts_server_unavailable" in f.cause
    assert "CRD" not in f.next_step
    assert "license" in f.next_step
