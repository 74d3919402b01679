from __future__ import annotations

import pytest

from bot.domain.reasons import PEER_AVAILABILITY, REASONS, ReasonKind, reason_info
from bot.domain.snapshot import DIAL_FAILURES, DISCOVERY_FALLBACKS, REQUESTS, TERMINATIONS

# The guide's table: reason -> (whose side, the other families it appears on, a word the next step names).
GUIDE_TABLE = [
    ("upstream", ReasonKind.TARGET_SIDE, set(), "5xx"),
    ("no_peer", ReasonKind.PROXY_FAULT, {DIAL_FAILURES, DISCOVERY_FALLBACKS}, "control plane pods"),
    ("stale_peers", ReasonKind.PROXY_FAULT, {DIAL_FAILURES, DISCOVERY_FALLBACKS}, "platform"),
    ("all_quarantined", ReasonKind.PROXY_FAULT, {DIAL_FAILURES, DISCOVERY_FALLBACKS}, "dial failures"),
    ("timeout", ReasonKind.PROXY_FAULT, {DIAL_FAILURES}, "NetworkPolicy"),
    ("deadline", ReasonKind.PROXY_FAULT, {TERMINATIONS, DIAL_FAILURES}, "dial duration"),
    ("canceled", ReasonKind.CALLER_SIDE, {DIAL_FAILURES}, "Nothing to fix"),
    ("peer_departed", ReasonKind.PROXY_FAULT, {DIAL_FAILURES}, "restarting"),
    ("ts_server_unavailable", ReasonKind.PROXY_FAULT, {DIAL_FAILURES}, "license"),
    ("error", ReasonKind.PROXY_FAULT, {DIAL_FAILURES}, "logs"),
    ("ownership_masked", ReasonKind.ISOLATION, set(), "ownership labels"),
    ("ownership_check_failed", ReasonKind.PROXY_FAULT, set(), "API server"),
    ("namespace_missing", ReasonKind.CALLER_SIDE, set(), "namespace"),
    ("upgrade_rejected", ReasonKind.CALLER_SIDE, {TERMINATIONS}, "directly"),
    ("upstream_error", ReasonKind.TARGET_SIDE, {DISCOVERY_FALLBACKS}, "CRD"),
]


@pytest.mark.parametrize(("name", "kind", "also_on", "step_word"), GUIDE_TABLE)
def test_every_guide_reason_is_catalogued(
    name: str, kind: ReasonKind, also_on: set[str], step_word: str
) -> None:
    info = reason_info(name)
    assert info.known
    assert info.name == name
    assert info.kind is kind
    # Every reason is on request_total; the table's "also on" column adds the rest.
    assert info.families == {REQUESTS} | also_on
    assert step_word in info.next_step
    assert info.meaning
    assert info.cause
    assert "Outcome reasons" in info.guide_section


def test_catalogue_holds_exactly_the_guide_table() -> None:
    assert set(REASONS) == {row[0] for row in GUIDE_TABLE}


def test_peer_availability_reasons_are_on_every_family_that_rejects_without_dialling() -> None:
    for name in PEER_AVAILABILITY:
        assert {DIAL_FAILURES, DISCOVERY_FALLBACKS} <= reason_info(name).families


@pytest.mark.parametrize(
    ("name", "fault"),
    [("canceled", False), ("ownership_masked", False), ("namespace_missing", False), ("timeout", True)],
)
def test_only_proxy_path_reasons_count_as_proxy_faults(name: str, fault: bool) -> None:
    assert reason_info(name).is_proxy_fault is fault


def test_ownership_masked_is_framed_as_isolation_with_an_rbac_escape_hatch() -> None:
    info = reason_info("ownership_masked")
    assert "isolation" in info.cause.lower()
    assert "RBAC" in info.next_step or "get" in info.next_step


def test_ownership_check_failed_is_not_isolation() -> None:
    assert reason_info("ownership_check_failed").kind is not ReasonKind.ISOLATION


@pytest.mark.parametrize("name", ["brand_new_reason", "", "NO_PEER"])
def test_unknown_reason_gets_a_generic_entry_not_a_key_error(name: str) -> None:
    info = reason_info(name)
    assert not info.known
    assert info.kind is ReasonKind.UNKNOWN
    assert info.name == name
    assert "newer proxy" in info.meaning
    assert info.next_step


# The troubleshooting page (loft-sh/vcluster-docs, vcluster/troubleshoot/resource-proxy.mdx) read per reason.


def test_a_dial_timeout_is_a_peer_path_failure_not_the_relay() -> None:
    """ "Requests time out after about 60 seconds": failures near 5 s are dial failures on the peer path, and
    3 of them quarantine the endpoint; operations page, "Confirm which path you are on": the relay raises
    dial latency by a step and keeps traffic flowing, so it does not explain a timeout."""
    info = reason_info("timeout")
    assert "Not a relay fallback" in info.cause
    assert "path check" not in info.next_step
    assert "quarantine" in info.next_step


def test_deadline_points_at_the_targets_response_path() -> None:
    """ "Requests time out after about 60 seconds": the request connected and the target answered too
    slowly; check its API server, backing store and webhooks, and compare request with dial duration."""
    info = reason_info("deadline")
    assert "relay" not in info.cause + info.next_step
    assert "connected" in info.cause
    for words in ("API server", "backing store", "webhooks", "request duration with dial duration"):
        assert words in info.next_step


def test_upstream_reads_the_client_proxy_logs_before_the_target() -> None:
    """ "Quick triage", last rows: `upstream` is also the default for unclassified proxy failures, so the
    client proxy's logs come before the target."""
    assert reason_info("upstream").next_step.startswith("Read the client proxy's logs first")
