from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.domain.alerts_catalog import ALERTS, PEER_CACHE_UNSYNCED, AlertScope, about_peer_feed, alert_info
from bot.domain.findings import Severity
from bot.domain.snapshot import ACTIVE_WATCHES, DISCOVERY_FALLBACKS, PEER_CACHE_SYNCED, PEERS, QUARANTINES

RULES = Path(__file__).resolve().parents[3] / "config" / "rules" / "proxy-alerts.yaml"

# alert -> (severity, scope, a word its meaning must name, a word one of its traps must name, evidence family)
GUIDE_ALERTS = [
    (
        "ResourceProxyNoHealthyPeers",
        Severity.CRITICAL,
        AlertScope.GROUP_VERSION,
        "half_open",
        "synced",
        PEERS,
    ),
    (
        "ResourceProxyPeerCacheUnsynced",
        Severity.CRITICAL,
        AlertScope.GROUP_VERSION,
        "503",
        "peer_list_age",
        PEER_CACHE_SYNCED,
    ),
    ("ResourceProxyTargetUnavailable", Severity.WARNING, AlertScope.TARGET, "503", "rolling restart", PEERS),
    ("ResourceProxyPeerChurn", Severity.WARNING, AlertScope.TARGET, "quarantine", "max", QUARANTINES),
    (
        "ResourceProxyDiscoveryDegraded",
        Severity.WARNING,
        AlertScope.GROUP_VERSION,
        "200",
        "APIService",
        DISCOVERY_FALLBACKS,
    ),
    ("ResourceProxyWatchesSilent", Severity.WARNING, AlertScope.TARGET, "event", "CBOR", ACTIVE_WATCHES),
    ("ResourceProxyProbeFailing", Severity.CRITICAL, AlertScope.PROBE, "probe", "APIService", PEERS),
]


@pytest.mark.parametrize(("name", "severity", "scope", "meaning_word", "trap_word", "family"), GUIDE_ALERTS)
def test_every_guide_alert_is_catalogued(
    name: str, severity: Severity, scope: AlertScope, meaning_word: str, trap_word: str, family: str
) -> None:
    info = alert_info(name)
    assert info is not None
    assert info.severity is severity
    assert info.scope is scope
    assert meaning_word in info.meaning
    assert any(trap_word in trap for trap in info.traps)
    assert family in info.live_evidence
    assert info.cause
    assert info.next_step
    assert info.guide_section


def test_catalogue_holds_exactly_the_guide_alerts() -> None:
    assert set(ALERTS) == {row[0] for row in GUIDE_ALERTS}


@pytest.mark.parametrize("name", ["SomethingElse", "", "resourceproxynohealthypeers"])
def test_unknown_alert_names_give_none(name: str) -> None:
    assert alert_info(name) is None


def _shipped_rules() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return {rule["alert"]: rule for group in doc["groups"] for rule in group["rules"] if "alert" in rule}


def test_catalogue_agrees_with_the_shipped_rule_file() -> None:
    rules = _shipped_rules()
    assert set(rules) == set(ALERTS)
    for name, rule in rules.items():
        info = ALERTS[name]
        assert Severity.from_label(rule["labels"]["severity"]) is info.severity, name
        assert rule.get("for") == info.for_duration, name


def test_watches_silent_trap_says_only_json_and_cbor_are_counted() -> None:
    info = alert_info("ResourceProxyWatchesSilent")
    assert info is not None
    assert any("JSON" in t and "CBOR" in t for t in info.traps)


def test_only_peer_cache_unsynced_is_about_the_client_peer_feed() -> None:
    # Read by the diagnosis (two causes, two steps) and the incidents (the cause it names).
    assert {name for name in ALERTS if about_peer_feed(name)} == {PEER_CACHE_UNSYNCED}
    assert not about_peer_feed("SomethingElse")
