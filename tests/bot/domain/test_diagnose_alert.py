from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from bot.domain.delta import ProxyDelta
from bot.domain.diagnosis import Standing, diagnose_alert
from bot.domain.findings import Severity
from bot.domain.snapshot import ALL_QUARANTINED, DISCOVERY_FALLBACKS, QUARANTINES, WATCH_EVENTS
from tests.bot.domain.diagnosis_pages import GV, GV2, Page, T, window

NO_HEALTHY = "ResourceProxyNoHealthyPeers"
UNSYNCED = "ResourceProxyPeerCacheUnsynced"
UNAVAILABLE = "ResourceProxyTargetUnavailable"
CHURN = "ResourceProxyPeerChurn"
DISCOVERY = "ResourceProxyDiscoveryDegraded"
SILENT = "ResourceProxyWatchesSilent"
PROBE = "ResourceProxyProbeFailing"

GV_LABELS = {"target": T, "group_version": GV, "pod": "orders-0", "severity": "critical"}
T_LABELS = {"target": T, "pod": "orders-0", "severity": "warning"}
PROBE_LABELS = {"namespace": "vcluster-orders", "cronjob": "proxy-probe", "severity": "critical"}


@dataclass(frozen=True)
class Case:
    """A live state: the page now, and optionally what changed during the window before it."""

    now: Page
    change: Callable[[Page], object] | None = None
    seconds: float = 900

    def read(self) -> tuple[Page, ProxyDelta | None]:
        if self.change is None:
            return self.now, None
        after = self.now.copy()
        self.change(after)
        return after, window(self.now, after, self.seconds)


def _nothing(page: Page) -> None:
    """A window in which nothing counted."""


CASES = [
    # alert, labels, live state, standing, a word the "now" line must carry
    (NO_HEALTHY, GV_LABELS, Case(Page().peers(0, 2)), Standing.STILL_BROKEN, "still no healthy peer"),
    (NO_HEALTHY, GV_LABELS, Case(Page().peers(0, 1, 1)), Standing.STILL_BROKEN, "half_open"),
    (NO_HEALTHY, GV_LABELS, Case(Page().peers(2)), Standing.RECOVERING, "healthy peers are back"),
    (NO_HEALTHY, GV_LABELS, Case(Page().peers(2), _nothing), Standing.RECOVERED, "no proxy-path failures"),
    (
        NO_HEALTHY,
        GV_LABELS,
        Case(Page().peers(2), lambda p: p.requests(9, "all_quarantined", "503")),
        Standing.RECOVERING,
        "9 requests failed",
    ),
    (UNSYNCED, GV_LABELS, Case(Page().peers(0, synced=0)), Standing.STILL_BROKEN, "unsynced"),
    (
        UNSYNCED,
        GV_LABELS,
        Case(Page().peers(0, synced=1)),
        Standing.STILL_BROKEN,
        "synced again but no healthy",
    ),
    (UNSYNCED, GV_LABELS, Case(Page().peers(3)), Standing.RECOVERING, "synced with healthy peers"),
    (UNAVAILABLE, T_LABELS, Case(Page().peers(0, 2)), Standing.STILL_BROKEN, "no healthy peer"),
    (
        UNAVAILABLE,
        T_LABELS,
        Case(Page().peers(2), lambda p: p.add(ALL_QUARANTINED, 1)),
        Standing.RECOVERING,
        "back",
    ),
    (UNAVAILABLE, T_LABELS, Case(Page().peers(2), _nothing), Standing.RECOVERED, "self-healed"),
    (
        CHURN,
        T_LABELS,
        Case(Page().peers(0, 2).peers(0, 1, gv=GV2)),
        Standing.STILL_BROKEN,
        "any group/version",
    ),
    (
        CHURN,
        T_LABELS,
        Case(Page().peers(1), lambda p: p.add(QUARANTINES, 4)),
        Standing.RECOVERING,
        "continue",
    ),
    (CHURN, T_LABELS, Case(Page().peers(1), _nothing), Standing.RECOVERED, "back"),
    (
        DISCOVERY,
        GV_LABELS,
        Case(
            Page().peers(2),
            lambda p: p.add(DISCOVERY_FALLBACKS, 3, group_version=GV, reason="upstream_error"),
        ),
        Standing.STILL_BROKEN,
        "fallback",
    ),
    (DISCOVERY, GV_LABELS, Case(Page().peers(0, synced=0)), Standing.STILL_BROKEN, "falls back"),
    (DISCOVERY, GV_LABELS, Case(Page().peers(2), _nothing), Standing.RECOVERED, "no discovery fallback"),
    (DISCOVERY, GV_LABELS, Case(Page().peers(2)), Standing.RECOVERING, "refuses discovery"),
    (SILENT, T_LABELS, Case(Page().peers().watches(4), _nothing, 3600), Standing.STILL_BROKEN, "no event"),
    (
        SILENT,
        T_LABELS,
        Case(Page().peers().watches(4), lambda p: p.add(WATCH_EVENTS, 12)),
        Standing.RECOVERED,
        "flowing",
    ),
    (SILENT, T_LABELS, Case(Page().peers().watches(0)), Standing.RECOVERED, "no watch is open"),
    (PROBE, PROBE_LABELS, Case(Page().peers(0, 0, 0)), Standing.STILL_BROKEN, "proxy itself is failing"),
    (PROBE, PROBE_LABELS, Case(Page().peers(3)), Standing.UNKNOWN, "run the probe"),
]


@pytest.mark.parametrize(("alert", "labels", "case", "standing", "word"), CASES)
def test_each_guide_alert_stands_against_the_live_state(
    alert: str, labels: dict[str, str], case: Case, standing: Standing, word: str
) -> None:
    page, win = case.read()
    d = diagnose_alert(alert, labels, page.snapshot(), win)
    assert d.known
    assert d.live
    assert d.standing is standing, d.now
    assert word in d.now
    assert d.meaning
    assert d.traps
    assert d.guide_section
    assert d.next_step
    assert d.cause


@pytest.mark.parametrize(
    ("alert", "severity"),
    [(NO_HEALTHY, Severity.CRITICAL), (CHURN, Severity.WARNING), (PROBE, Severity.CRITICAL)],
)
def test_severity_comes_from_the_catalogue_not_the_label(alert: str, severity: Severity) -> None:
    d = diagnose_alert(alert, {**T_LABELS, "severity": "info"}, Page().peers().snapshot())
    assert d.severity is severity


def test_still_broken_takes_cause_and_step_from_the_matching_finding() -> None:
    d = diagnose_alert(NO_HEALTHY, GV_LABELS, Page().peers(0, 0, 0).snapshot())
    assert d.standing is Standing.STILL_BROKEN
    assert "empty peer list" in d.cause
    assert "target tenant cluster is running" in d.next_step


def test_recovering_says_to_watch_it_resolve() -> None:
    d = diagnose_alert(NO_HEALTHY, GV_LABELS, Page().peers(3).snapshot())
    assert d.next_step.startswith("Watch it resolve")


def test_findings_are_those_of_the_alerted_group_version() -> None:
    page = Page().peers(0, 2).peers(0, 3, gv=GV2)
    d = diagnose_alert(NO_HEALTHY, GV_LABELS, page.snapshot())
    gvs = {f.group_version for f in d.findings}
    assert GV in gvs
    assert GV2 not in gvs
    assert all(f.target == T for f in d.findings)


def test_replica_and_labels_are_carried() -> None:
    d = diagnose_alert(NO_HEALTHY, GV_LABELS, Page().peers().snapshot())
    assert (d.target, d.group_version, d.pod) == (T, GV, "orders-0")


def test_unreachable_cluster_is_said_plainly() -> None:
    d = diagnose_alert(NO_HEALTHY, GV_LABELS, None)
    assert (d.standing, d.live, d.findings) == (Standing.UNKNOWN, False, ())
    assert "could not be read" in d.now
    assert d.known
    assert d.meaning


def test_unknown_alert_is_diagnosed_plainly_without_raising() -> None:
    d = diagnose_alert(
        "KubePodCrashLooping", {"target": T, "severity": "warning"}, Page().peers(0, 2).snapshot()
    )
    assert not d.known
    assert d.standing is Standing.UNKNOWN
    assert d.severity is Severity.WARNING
    assert "not one of the guide's" in d.meaning
    assert d.findings
    assert d.findings[0].severity is Severity.CRITICAL
    assert "no healthy peers" in d.now


@pytest.mark.parametrize("labels", [{}, {"group_version": GV}, {"target": "", "severity": "bogus"}])
def test_missing_or_odd_labels_never_raise(labels: dict[str, str]) -> None:
    d = diagnose_alert(NO_HEALTHY, labels, Page().peers().snapshot())
    assert d.standing is Standing.UNKNOWN
    assert "no target label" in d.now


@pytest.mark.parametrize("alert", [NO_HEALTHY, SILENT, DISCOVERY])
def test_target_the_replica_does_not_report_is_unknown_not_healthy(alert: str) -> None:
    d = diagnose_alert(alert, {**GV_LABELS, "target": "shop/elsewhere"}, Page().peers().snapshot())
    assert d.standing is Standing.UNKNOWN
    assert "another replica" in d.now


def test_group_version_the_replica_does_not_report_is_unknown() -> None:
    d = diagnose_alert(NO_HEALTHY, {**GV_LABELS, "group_version": "gone.io/v1"}, Page().peers().snapshot())
    assert d.standing is Standing.UNKNOWN
    assert "no peer gauge" in d.now
