"""The shipped alert rules load in promtool, pass their unit tests, and those tests catch broken rules."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

RULES_DIR = Path(__file__).resolve().parents[2] / "config" / "rules"
RULES = RULES_DIR / "proxy-alerts.yaml"
RULE_TESTS = RULES_DIR / "proxy-alerts.test.yaml"

# The guide's alert starting points: name -> (severity, `for` duration or None).
GUIDE_ALERTS: dict[str, tuple[str, str | None]] = {
    "ResourceProxyNoHealthyPeers": ("critical", "2m"),
    "ResourceProxyPeerCacheUnsynced": ("critical", "2m"),
    "ResourceProxyTargetUnavailable": ("warning", None),
    "ResourceProxyPeerChurn": ("warning", None),
    "ResourceProxyDiscoveryDegraded": ("warning", "5m"),
    "ResourceProxyWatchesSilent": ("warning", "30m"),
    "ResourceProxyProbeFailing": ("critical", None),
}

Rule = dict[str, Any]


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    """Run promtool; a missing promtool is a failure, never a skip (it ships with Debian's prometheus)."""
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is not on PATH: install Debian's `prometheus` package")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60, check=False)


def assert_ok(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, f"promtool exited {result.returncode}\n{result.stdout}\n{result.stderr}"


def alert_rules(document: dict[str, Any]) -> list[Rule]:
    return [rule for group in document["groups"] for rule in group["rules"] if "alert" in rule]


def test_promtool_check_rules_accepts_the_rule_file() -> None:
    result = promtool("check", "rules", str(RULES))
    assert_ok(result)
    assert "SUCCESS: 7 rules found" in result.stdout


def test_promtool_unit_tests_pass() -> None:
    assert_ok(promtool("test", "rules", str(RULE_TESTS)))


def test_rule_file_holds_exactly_the_guides_alerts() -> None:
    rules = alert_rules(yaml.safe_load(RULES.read_text()))
    found = {rule["alert"]: (rule["labels"]["severity"], rule.get("for")) for rule in rules}
    assert len(rules) == len(found), "an alert name appears twice"
    assert found == GUIDE_ALERTS


def test_every_alert_has_a_summary() -> None:
    for rule in alert_rules(yaml.safe_load(RULES.read_text())):
        assert "{{" in rule["annotations"]["summary"], rule["alert"]


def find_rule(document: dict[str, Any], name: str) -> Rule:
    return next(rule for rule in alert_rules(document) if rule["alert"] == name)


def rewrite_expr(name: str, old: str, new: str) -> Callable[[dict[str, Any]], None]:
    def mutate(document: dict[str, Any]) -> None:
        rule = find_rule(document, name)
        assert old in rule["expr"], f"mutation target {old!r} not in {name}"
        rule["expr"] = rule["expr"].replace(old, new)

    return mutate


def drop_for(name: str) -> Callable[[dict[str, Any]], None]:
    def mutate(document: dict[str, Any]) -> None:
        del find_rule(document, name)["for"]

    return mutate


def run_suite_on(document: dict[str, Any], workdir: Path) -> subprocess.CompletedProcess[str]:
    """Run the shipped unit tests against a (possibly mutated) copy of the rule file."""
    (workdir / RULES.name).write_text(yaml.safe_dump(document, sort_keys=False))
    shutil.copy(RULE_TESTS, workdir / RULE_TESTS.name)
    return promtool("test", "rules", str(workdir / RULE_TESTS.name))


def test_an_unmutated_copy_passes(tmp_path: Path) -> None:
    # The control for the mutation tests below: the copying itself does not break the suite.
    assert_ok(run_suite_on(yaml.safe_load(RULES.read_text()), tmp_path))


HEALTHY = 'vcluster_proxy_peers{state="healthy"}'

MUTATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "no-healthy-without-for": drop_for("ResourceProxyNoHealthyPeers"),
    "no-healthy-summed-by-target": rewrite_expr(
        "ResourceProxyNoHealthyPeers", HEALTHY, f"sum by (target) ({HEALTHY})"
    ),
    "no-healthy-summed-over-replicas": rewrite_expr(
        "ResourceProxyNoHealthyPeers", HEALTHY, f"sum without (pod) ({HEALTHY})"
    ),
    "unsynced-max-over-replicas": rewrite_expr(
        "ResourceProxyPeerCacheUnsynced",
        "vcluster_proxy_peer_cache_synced",
        "min without (pod) (vcluster_proxy_peer_cache_synced)",
    ),
    "target-unavailable-on-flat-counter": rewrite_expr("ResourceProxyTargetUnavailable", "> 0", ">= 0"),
    "churn-any-group-version": rewrite_expr("ResourceProxyPeerChurn", "max without", "min without"),
    "churn-without-quarantines": rewrite_expr(
        "ResourceProxyPeerChurn", "increase(vcluster_proxy_peer_quarantines_total[30m]) > 5 and ", ""
    ),
    "discovery-without-for": drop_for("ResourceProxyDiscoveryDegraded"),
    "watches-ignoring-events": rewrite_expr(
        "ResourceProxyWatchesSilent", " unless increase(vcluster_proxy_watch_events_total[1h]) > 0", ""
    ),
    "probe-only-last-success": rewrite_expr(
        "ResourceProxyProbeFailing", 'cronjob="proxy-probe"} > 900 or', 'cronjob="proxy-probe"} > 900 and'
    ),
    "probe-any-namespace": rewrite_expr("ResourceProxyProbeFailing", 'namespace=~"vcluster-.*",', ""),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_unit_tests_catch_a_broken_rule(mutation: str, tmp_path: Path) -> None:
    document = yaml.safe_load(RULES.read_text())
    MUTATIONS[mutation](document)
    result = run_suite_on(document, tmp_path)
    assert result.returncode != 0, f"the suite still passes with mutation {mutation}:\n{result.stdout}"
