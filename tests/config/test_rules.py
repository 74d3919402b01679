"""The shipped alert rules load in promtool, pass their unit tests, and those tests catch broken rules: the
guide's resource proxy rules (proxy-alerts.yaml) and proxybot's rules about itself (proxybot-alerts.yaml),
which alert only on metrics the bot exposes."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from bot.clients import slack
from bot.metrics import BotMetrics

RULES_DIR = Path(__file__).resolve().parents[2] / "config" / "rules"
RULES = RULES_DIR / "proxy-alerts.yaml"
RULE_TESTS = RULES_DIR / "proxy-alerts.test.yaml"
BOT_RULES = RULES_DIR / "proxybot-alerts.yaml"
BOT_RULE_TESTS = RULES_DIR / "proxybot-alerts.test.yaml"
RULE_FILES = {RULES: RULE_TESTS, BOT_RULES: BOT_RULE_TESTS}

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

# proxybot's rules about itself: name -> (severity, `for` duration or None).
BOT_ALERTS: dict[str, tuple[str, str | None]] = {
    "ProxybotDown": ("critical", "5m"),
    "ProxybotNotScraped": ("warning", "15m"),
    "ProxybotOutboxStuck": ("critical", "2m"),
    "ProxybotOutboxBacklog": ("warning", "15m"),
    "ProxybotSlackRejecting": ("warning", None),
    "ProxybotSlackFailing": ("critical", "5m"),
    "ProxybotWebhookDeliveryFailing": ("warning", None),
    "ProxybotRefusingNotifications": ("warning", None),
    "ProxybotDigestFailed": ("warning", None),
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


@pytest.mark.parametrize("rules", RULE_FILES, ids=lambda path: path.name)
def test_promtool_check_rules_accepts_the_rule_file(rules: Path) -> None:
    result = promtool("check", "rules", str(rules))
    assert_ok(result)
    count = len(alert_rules(yaml.safe_load(rules.read_text())))
    assert f"SUCCESS: {count} rules found" in result.stdout


@pytest.mark.parametrize("rules", RULE_FILES, ids=lambda path: path.name)
def test_promtool_unit_tests_pass(rules: Path) -> None:
    assert_ok(promtool("test", "rules", str(RULE_FILES[rules])))


@pytest.mark.parametrize(("rules", "wanted"), [(RULES, GUIDE_ALERTS), (BOT_RULES, BOT_ALERTS)])
def test_rule_file_holds_exactly_its_alerts(rules: Path, wanted: dict[str, tuple[str, str | None]]) -> None:
    found_rules = alert_rules(yaml.safe_load(rules.read_text()))
    found = {rule["alert"]: (rule["labels"]["severity"], rule.get("for")) for rule in found_rules}
    assert len(found_rules) == len(found), "an alert name appears twice"
    assert found == wanted


def test_every_alert_has_a_summary() -> None:
    for rule in alert_rules(yaml.safe_load(RULES.read_text())):
        assert "{{" in rule["annotations"]["summary"], rule["alert"]
    for rule in alert_rules(yaml.safe_load(BOT_RULES.read_text())):
        assert rule["annotations"]["summary"], rule["alert"]
        assert rule["annotations"]["description"], rule["alert"]


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


def run_suite_on(
    document: dict[str, Any], workdir: Path, rules: Path = RULES
) -> subprocess.CompletedProcess[str]:
    """Run the shipped unit tests of `rules` against a (possibly mutated) copy of that rule file."""
    (workdir / rules.name).write_text(yaml.safe_dump(document, sort_keys=False))
    shutil.copy(RULE_FILES[rules], workdir / RULE_FILES[rules].name)
    return promtool("test", "rules", str(workdir / RULE_FILES[rules].name))


@pytest.mark.parametrize("rules", RULE_FILES, ids=lambda path: path.name)
def test_an_unmutated_copy_passes(rules: Path, tmp_path: Path) -> None:
    # The control for the mutation tests below: the copying itself does not break the suite.
    assert_ok(run_suite_on(yaml.safe_load(rules.read_text()), tmp_path, rules))


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


OUTBOX_AGE = "proxybot_outbox_oldest_pending_age_seconds"
OUTBOX_DEPTH = "proxybot_outbox_depth"
PER_DEPLOYMENT = "max without (instance, pod) ({})"
# The folded YAML of the rule, as the expression reads: the new-series branch keeps its line breaks.
NEW_REFUSAL = (
    ' or sum without (instance, pod) (\n  proxybot_slack_calls_total{outcome="SlackRejected"}\n'
    '  unless proxybot_slack_calls_total{outcome="SlackRejected"} offset 15m\n)'
)
NO_SUCCESS = (
    " unless ignoring (outcome) sum without (instance, pod, method, outcome) "
    '(increase(proxybot_slack_calls_total{outcome="ok"}[10m])) > 0'
)

BOT_MUTATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "down-without-for": drop_for("ProxybotDown"),
    "not-scraped-any-job": rewrite_expr("ProxybotNotScraped", 'up{job="proxybot"}', "up"),
    "stuck-per-replica": rewrite_expr("ProxybotOutboxStuck", PER_DEPLOYMENT.format(OUTBOX_AGE), OUTBOX_AGE),
    "stuck-without-for": drop_for("ProxybotOutboxStuck"),
    "backlog-per-replica": rewrite_expr(
        "ProxybotOutboxBacklog", PER_DEPLOYMENT.format(OUTBOX_DEPTH), OUTBOX_DEPTH
    ),
    "rejecting-misses-the-first-refusal": rewrite_expr("ProxybotSlackRejecting", NEW_REFUSAL, ""),
    "rejecting-rate-limits-too": rewrite_expr(
        "ProxybotSlackRejecting", "[15m])) > 0", '[15m])) > 0 or proxybot_slack_calls_total{outcome!="ok"}'
    ),
    "failing-despite-successes": rewrite_expr("ProxybotSlackFailing", NO_SUCCESS, ""),
    "webhook-any-integration": rewrite_expr("ProxybotWebhookDeliveryFailing", '{integration="webhook"}', ""),
}


@pytest.mark.parametrize("mutation", sorted(BOT_MUTATIONS))
def test_bot_unit_tests_catch_a_broken_rule(mutation: str, tmp_path: Path) -> None:
    document = yaml.safe_load(BOT_RULES.read_text())
    BOT_MUTATIONS[mutation](document)
    result = run_suite_on(document, tmp_path, BOT_RULES)
    assert result.returncode != 0, f"the suite still passes with mutation {mutation}:\n{result.stdout}"


def exposed_names() -> set[str]:
    """The sample names of proxybot's /metrics once every labelled metric has a child."""
    metrics = BotMetrics()
    metrics.slack_calls.labels("chat.postMessage", "ok").inc()
    metrics.alerts_accepted.labels(duplicate="false").inc()
    metrics.command_seconds.labels("status").observe(0.1)
    metrics.notifications_refused.labels("401").inc()
    metrics.digest_runs.labels("failed").inc()
    text = metrics.exposition().decode()
    return {sample.name for family in text_string_to_metric_families(text) for sample in family.samples}


def test_bot_rules_alert_only_on_metrics_the_bot_exposes() -> None:
    exprs = [rule["expr"] for rule in alert_rules(yaml.safe_load(BOT_RULES.read_text()))]
    named = {name for expr in exprs for name in re.findall(r"\b(proxybot_\w+|process_\w+)", expr)}
    assert named
    assert named <= exposed_names(), f"not on /metrics: {sorted(named - exposed_names())}"


def test_bot_rules_name_slack_outcomes_the_client_reports() -> None:
    # The client counts a failed call under its error class's name (bot/clients/slack.py `_call`).
    outcomes = {
        name
        for name, value in vars(slack).items()
        if isinstance(value, type) and issubclass(value, slack.SlackError)
    }
    text = BOT_RULES.read_text()
    named = set(re.findall(r'proxybot_slack_calls_total\{outcome(?:!?=~?)"(\w+)"', text)) - {"ok"}
    assert named
    assert named <= outcomes
