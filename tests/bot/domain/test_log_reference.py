"""The log reference: every entry found by its substring, its fields read, other targets' lines left out,
lines redacted before anything keeps them, and the placeholder host recognised as not a DNS problem."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.findings import Severity
from bot.domain.log_reference import (
    REFERENCE,
    LogMatch,
    PodLog,
    log_evidence,
    parse_line,
    pod_matches,
    reference_of,
)

TARGET = "payments/ledger"
GVS = ("ledger.payments.example.com/v1",)


def line(message: str, fields: str = "", at: str = "2024-05-01T10:00:00.123456789Z") -> str:
    """A line as the kubelet serves it with timestamps=true, in vCluster's console format."""
    return f'{at} 2024-05-01 10:00:00\tINFO\tproxy/proxy.go\t{message}\t{{"component": "vcluster"{fields}}}'


# One line per entry, as vCluster writes them (the reference's substring and what follows it).
LINES = {
    "proxy_started": line("Starting proxy server", ', "groupVersion": "ledger.payments.example.com/v1"'),
    "startup_sync_timeout": line(
        "peer cache did not sync in time for the startup probe, requests fail with 503 until the first "
        "netmap arrives"
    ),
    "initial_probe_failed": line(
        "initial probe of proxy target failed, requests will keep retrying",
        ', "error": "dial kube.ledger.payments.vcluster.invalid: i/o timeout"',
    ),
    "quarantining_peer": line(
        "quarantining proxy target peer host after consecutive dial failures",
        ', "host": "10.0.4.7:8443", "consecutiveFailures": 3, "target": "payments/ledger"',
    ),
    "all_quarantined": line(
        "all peer hosts for the proxy target are quarantined; requests fail fast with 503",
        ', "target": "payments/ledger"',
    ),
    "peer_watch_down": line(
        "peer watch subscription is down and no fresh netmap is available; requests to the target fail",
        ', "lastNetmapAge": "2m1s"',
    ),
    "namespace_created": line("creating namespace on target cluster", ', "namespace": "apps"'),
    "inject_labels_failed": line("inject source labels failed", ', "error": "invalid character"'),
}


def test_every_entry_of_the_reference_has_a_line_here() -> None:
    assert {ref.key for ref in REFERENCE} == set(LINES)
    assert len(REFERENCE) == 8


@pytest.mark.parametrize("key", list(LINES))
def test_each_entry_is_found_with_its_meaning_and_action(key: str) -> None:
    [match] = pod_matches("vc-0", [LINES[key]], TARGET, GVS)
    assert match.reference.key == key
    assert match.count == 1
    assert match.pod == "vc-0"
    assert match.reference.meaning
    assert match.reference.action
    assert match.last_at == datetime(2024, 5, 1, 10, 0, 0, 123456, UTC)


def test_the_startup_pair_is_one_entry_counted_per_line() -> None:
    pair = [line("Starting proxy server"), line("Starting target transport")] * 2
    [match] = pod_matches("vc-0", pair, TARGET)
    assert (match.reference.key, match.count) == ("proxy_started", 4)
    assert match.reference.severity is Severity.OK


def test_the_quarantine_line_carries_host_failures_and_target() -> None:
    [match] = pod_matches("vc-0", [LINES["quarantining_peer"]], TARGET)
    assert match.details == ("host=10.0.4.7:8443", "consecutiveFailures=3")
    assert not match.placeholder_host


def test_the_watch_down_line_carries_the_last_netmap_age() -> None:
    [match] = pod_matches("vc-0", [LINES["peer_watch_down"]], TARGET)
    assert match.details == ("lastNetmapAge=2m1s",)
    assert match.reference.severity is Severity.CRITICAL


def test_a_placeholder_host_is_recognised() -> None:
    [match] = pod_matches("vc-0", [LINES["initial_probe_failed"]], TARGET)
    assert match.placeholder_host
    assert "error=dial kube.ledger.payments.vcluster.invalid: i/o timeout" in match.details


def test_lines_of_another_target_or_group_version_are_left_out() -> None:
    other = line("all peer hosts for the proxy target are quarantined", ', "target": "payments/fraud"')
    bare_name = line("all peer hosts for the proxy target are quarantined", ', "target": "ledger"')
    other_gv = line("Starting proxy server", ', "groupVersion": "fraud.payments.example.com/v1"')
    found = pod_matches("vc-0", [other, other_gv, bare_name], TARGET, GVS)
    assert [(m.reference.key, m.count) for m in found] == [("all_quarantined", 1)]


def test_ordinary_lines_are_not_matched() -> None:
    noise = [
        "2024-05-01T10:00:00Z 2024-05-01 10:00:00\tINFO\tsetup/initialize.go:82\tUsing physical cluster",
        "I0501 10:00:00.000000       1 controller.go:42] Starting workers",
        "",
        "{not json",
    ]
    assert pod_matches("vc-0", noise, TARGET) == []


def test_counts_first_and_last_times_across_lines() -> None:
    at = ["2024-05-01T10:00:00Z", "2024-05-01T10:00:20Z", "2024-05-01T10:00:40Z"]
    lines = [line("all peer hosts for the proxy target are quarantined", at=t) for t in at]
    [match] = pod_matches("vc-0", lines, TARGET)
    assert match.count == 3
    assert (match.first_at, match.last_at) == (
        datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC),
        datetime(2024, 5, 1, 10, 0, 40, tzinfo=UTC),
    )


def test_a_line_without_a_kubelet_time_still_matches() -> None:
    text = (
        "quarantining proxy target peer host after consecutive dial failures host=10.0.0.1:443 target=ledger"
    )
    [match] = pod_matches("vc-0", [text], TARGET)
    assert match.last_at is None
    assert match.details == ("host=10.0.0.1:443",)


def test_a_planted_credential_never_reaches_a_match() -> None:
    planted = line(
        "initial probe of proxy target failed, requests will keep retrying",
        ', "error": "401 from https://ops:s3cret@platform.example.com: '
        'Authorization: Bearer abcdefgh12345678"',
    )
    [match] = pod_matches("vc-0", [planted], TARGET)
    kept = " ".join([match.last_line, *match.details])
    assert "s3cret" not in kept
    assert "abcdefgh12345678" not in kept
    assert "[REDACTED]" in kept


def test_evidence_is_worst_first_per_pod_and_says_what_was_read() -> None:
    reads = [
        PodLog("vc-1", (LINES["quarantining_peer"], LINES["proxy_started"])),
        PodLog("vc-0", (LINES["all_quarantined"],)),
        PodLog("vc-2", error="cluster control plane: GET ... answered 403"),
    ]
    ev = log_evidence(TARGET, "vcluster-ledger", "last 100 lines", reads, GVS)
    assert [(m.pod, m.reference.key) for m in ev.matches] == [
        ("vc-0", "all_quarantined"),
        ("vc-1", "quarantining_peer"),
        ("vc-1", "proxy_started"),
    ]
    assert ev.severity is Severity.CRITICAL
    assert [(p.pod, p.lines, p.error is not None) for p in ev.pods] == [
        ("vc-1", 2, False),
        ("vc-0", 1, False),
        ("vc-2", 0, True),
    ]
    assert not ev.complete


def test_nothing_matched_is_ok_and_complete() -> None:
    ev = log_evidence(TARGET, "vcluster-ledger", "last 100 lines", [PodLog("vc-0", ("hello",))])
    assert ev.severity is Severity.OK
    assert ev.complete
    assert ev.matches == ()


def test_reference_of_finds_by_substring_only() -> None:
    assert reference_of("xx inject source labels failed: bad json") is not None
    assert reference_of("Inject Source Labels Failed") is None  # the reference's words, as written


@given(st.text(max_size=400))
def test_any_text_parses_and_matches_without_raising(text: str) -> None:
    parse_line(text)
    found = pod_matches("vc-0", text.splitlines(), TARGET)
    assert all(isinstance(m, LogMatch) for m in found)
