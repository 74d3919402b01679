"""Log evidence in words: pod text is escaped in Block Kit, an alert shows the worst few matches and points
at `proxybot logs` for the rest, and what was not read is said."""

from __future__ import annotations

import json

from bot.domain.diagnosis import diagnose_alert
from bot.domain.enrichment import Unavailable
from bot.domain.log_reference import LogEvidence, PodLog, PodSummary, log_evidence
from bot.domain.logs_result import LogsResult
from bot.render.checks_logs import evidence_lines, logs_message, with_logs

TARGET = "payments/ledger"


def stamped(message: str, extra: str = "") -> str:
    fields = f'{{"target": "{TARGET}"{extra}}}'
    return f"2024-05-01T10:00:00Z 2024-05-01 10:00:00\tINFO\tproxy.go\t{message}\t{fields}"


EVERY = [
    stamped("peer watch subscription is down and no fresh netmap is available", ', "lastNetmapAge": "5m0s"'),
    stamped("all peer hosts for the proxy target are quarantined"),
    stamped("peer cache did not sync in time for the startup probe"),
    stamped(
        "quarantining proxy target peer host after consecutive dial failures", ', "host": "10.0.0.1:443"'
    ),
    stamped("initial probe of proxy target failed, requests will keep retrying"),
    stamped("Starting proxy server"),
]


def evidence(*reads: PodLog) -> LogEvidence:
    return log_evidence(TARGET, "vcluster-prod", "last 100 lines", reads)


def test_an_alert_counts_the_worst_matches_and_points_at_the_rest() -> None:
    # Counted, not quoted: one line, each match's label and count; the lines and meanings are `logs`'.
    text = evidence_lines(evidence(PodLog("prod-0", tuple(EVERY))))
    assert "\n" not in text
    head, matches = text.split(": ", 1)
    assert head == "Control-plane logs (last 100 lines of 1 pod in vcluster-prod)"
    assert matches.startswith("prod-0: peer cache did not sync in time for the startup probe (1 line); ")
    assert matches.count("prod-0") == 1, "each pod named once"
    assert matches.count(" line") == 4
    assert matches.endswith(" (+2 more: proxybot logs payments/ledger)")
    assert len(text) < 400


def test_an_alert_says_what_was_not_read_and_when_nothing_matched() -> None:
    ev = evidence(PodLog("prod-0", ("hello",)), PodLog("prod-1", error="403 forbidden"))
    assert evidence_lines(ev) == (
        "Control-plane logs (last 100 lines of 1 pod of 2 in vcluster-prod): "
        "no line of the vendor's log reference; prod-1: not read: 403 forbidden"
    )
    unread = LogEvidence(TARGET, "vcluster-prod", "last 100 lines", (), (), "no pod labelled app=vcluster")
    assert evidence_lines(unread) == "Control-plane logs: unavailable: no pod labelled app=vcluster"


def test_with_logs_adds_one_evidence_entry_or_none() -> None:
    diagnosis = diagnose_alert("ResourceProxyNoHealthyPeers", {"target": TARGET}, None)
    assert with_logs(diagnosis, None) is diagnosis
    late = with_logs(diagnosis, Unavailable(5.0, late=True))
    assert late.now_evidence[-1] == "Control-plane logs: unavailable: took longer than 5s"
    read = with_logs(diagnosis, evidence(PodLog("prod-0", (EVERY[1],))))
    assert len(read.now_evidence) == len(diagnosis.now_evidence) + 1


def test_pod_text_is_escaped_in_the_answer() -> None:
    hostile = stamped("all peer hosts for the proxy target are quarantined <!channel> <https://evil|click>")
    result = LogsResult("prod", evidence(PodLog("prod-0", (hostile,))))
    blocks = json.dumps(logs_message(result).blocks)
    assert "<!channel>" not in blocks
    assert "<https://evil" not in blocks
    assert "&lt;!channel&gt;" in blocks


def test_the_answer_names_pods_read_and_not_read() -> None:
    ev = LogEvidence(
        TARGET,
        "vcluster-prod",
        "last 10m",
        (PodSummary("prod-0", 12, None), PodSummary("prod-1", 0, "GET answered 403")),
        (),
    )
    text = json.dumps(logs_message(LogsResult("prod", ev)).blocks)
    assert "`prod-0` (12 lines)" in text
    assert "`prod-1` not read: GET answered 403" in text
    assert "No line of the vendor's log reference" in text
