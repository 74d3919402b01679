from __future__ import annotations

import pytest

from bot.domain.findings import Finding, Severity, finding_key, sort_worst_first, worst


def make(severity: Severity, target: str = "p/a", key: str = "k") -> Finding:
    return Finding(
        severity=severity,
        kind="kind",
        key=key,
        title="t",
        evidence=(),
        cause="c",
        next_step="n",
        guide_section="s",
        target=target,
    )


def test_severities_are_ordered() -> None:
    assert Severity.OK < Severity.INFO < Severity.WARNING < Severity.CRITICAL
    assert [s.label for s in Severity] == ["ok", "info", "warning", "critical"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("critical", Severity.CRITICAL), (" Warning ", Severity.WARNING), ("page", None), ("", None)],
)
def test_severity_from_an_alert_label(text: str, expected: Severity | None) -> None:
    assert Severity.from_label(text) is expected


def test_keys_name_kind_target_group_version_and_detail() -> None:
    assert finding_key("no_healthy_peers", "p/a", "x.io/v1") == "no_healthy_peers:p/a:x.io/v1"
    assert finding_key("request_reason", "p/a", "x.io/v1", "timeout") == "request_reason:p/a:x.io/v1:timeout"
    assert finding_key("dial_failures", "p/a") == "dial_failures:p/a"


def test_worst_first_and_worst() -> None:
    found = [make(Severity.INFO, "p/b"), make(Severity.CRITICAL, "p/z"), make(Severity.INFO, "p/a")]
    assert [(f.severity, f.target) for f in sort_worst_first(found)] == [
        (Severity.CRITICAL, "p/z"),
        (Severity.INFO, "p/a"),
        (Severity.INFO, "p/b"),
    ]
    assert worst(found) is Severity.CRITICAL
    assert worst([]) is Severity.OK
