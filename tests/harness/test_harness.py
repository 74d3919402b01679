"""Smoke tests: the real Prometheus and Alertmanager start, answer their APIs, and deliver to a webhook."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.alertmanager import Alertmanager
from tests.harness.prometheus import Json, Prometheus, ScrapeJob
from tests.harness.webhook import Delivery, WebhookSink
from tests.waiting import WaitTimeout, wait_until

ALWAYS_FIRING = """
groups:
  - name: smoke
    rules:
      - alert: SmokeAlwaysFiring
        expr: vector(1)
        labels: {severity: info, target: smoke/one}
        annotations: {summary: 'always firing'}
"""


def firing_names(prom: Prometheus) -> set[str] | None:
    names = {alert["labels"]["alertname"] for alert in prom.alerts()}
    return names or None


def deliveries_with(sink: WebhookSink, alertname: str) -> list[Delivery] | None:
    found = [
        d for d in sink.received() if any(a["labels"]["alertname"] == alertname for a in d.body["alerts"])
    ]
    return found or None


@pytest.mark.slow
def test_prometheus_scrapes_evaluates_and_answers(tmp_path: Path) -> None:
    with Prometheus(tmp_path, rules={"smoke.yaml": ALWAYS_FIRING}) as prom:
        assert [group["name"] for group in prom.rule_groups()] == ["smoke"]
        assert prom.wait_until(firing_names, 20, "the smoke alert to fire") == {"SmokeAlwaysFiring"}
        assert prom.query("vector(2)")[0]["value"][1] == "2"


@pytest.mark.slow
def test_prometheus_scrape_job_reaches_a_target(tmp_path: Path) -> None:
    # A second Prometheus scrapes the first: the static target, path and labels all reach the series.
    (tmp_path / "upstream").mkdir()
    (tmp_path / "scraper").mkdir()
    with Prometheus(tmp_path / "upstream") as upstream:
        job = ScrapeJob("upstream", f"127.0.0.1:{upstream.port}", labels={"pod": "orders-0"})
        with Prometheus(tmp_path / "scraper", [job]) as prom:
            prom.wait_for_scrapes(timeout=20)
            series: list[Json] = prom.query('up{job="upstream"}')
            assert [(s["metric"]["pod"], s["value"][1]) for s in series] == [("orders-0", "1")]


@pytest.mark.slow
def test_alertmanager_delivers_to_the_webhook_with_the_bearer_token(tmp_path: Path) -> None:
    with WebhookSink() as sink, Alertmanager(tmp_path, sink.url, bearer_token="s3cret") as am:
        am.post_alerts([{"labels": {"alertname": "SmokePosted", "target": "smoke/one"}}])
        assert [a["labels"]["alertname"] for a in am.alerts()] == ["SmokePosted"]
        delivered = am_wait(sink, am, "SmokePosted")
        assert delivered.authorization == "Bearer s3cret"
        assert delivered.body["version"] == "4"
        assert delivered.body["status"] == "firing"


@pytest.mark.slow
def test_prometheus_alerts_reach_the_webhook_through_alertmanager(tmp_path: Path) -> None:
    (tmp_path / "am").mkdir()
    (tmp_path / "prom").mkdir()
    with (
        WebhookSink() as sink,
        Alertmanager(tmp_path / "am", sink.url) as am,
        Prometheus(tmp_path / "prom", rules={"smoke.yaml": ALWAYS_FIRING}, alertmanager=am.url),
    ):
        delivered = am_wait(sink, am, "SmokeAlwaysFiring")
        assert delivered.authorization is None
        assert delivered.body["commonLabels"]["target"] == "smoke/one"


def am_wait(sink: WebhookSink, am: Alertmanager, alertname: str) -> Delivery:
    try:
        return wait_until(lambda: deliveries_with(sink, alertname), 20, f"{alertname} at the webhook", 0.2)[0]
    except WaitTimeout as error:
        raise AssertionError(f"{error}\nAlertmanager log:\n{am.log_tail()}") from None
