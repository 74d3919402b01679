"""Prometheus and Alertmanager down (nothing listens) or hung (they accept and never answer).

The bot is configured with both; the clusters are healthy. What must hold: an alert is posted within the
enrichment budget with its live state and without the Prometheus parts, which are marked unavailable with
the reason; once Prometheus is known to fail, the next alerts are not held for the whole budget; the
*Silence…* modal, pressed and submitted as Slack sends them, is answered in the modal with the reason within
Slack's 3 s (Alertmanager is given 2); the process logs no traceback.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from bot.render.silence_modal import COMMENT_BLOCK, CUSTOM_BLOCK, DURATION_BLOCK, VALUE
from sim.ports import free_port
from sim.server import SimServer
from sim.slack_api import FakeSlack
from sim.slack_views import option_value, text_value
from tests.e2e.stack import WEBHOOK_TOKEN, BotProcess
from tests.faults import upstream_faults
from tests.faults.upstream_faults import (
    FAULTY,
    HEALTHY,
    Unanswering,
    fault_config,
    message_about,
    post_alert,
    silence_through_form,
    thread_text,
)

two_clusters = upstream_faults.two_clusters
fault_slack = upstream_faults.fault_slack

BUDGET = 5.0  # enrichment.timeout_seconds
MARGIN = 2.0
WINDOW = "Window counts (last 15m, from Prometheus): unavailable: "
WHY = {"down": "Prometheus {url} /api/v1/query: unreachable (ConnectError", "hung": "took longer than 5s"}
SILENCE_WHY = {
    "down": "Alertmanager refused or failed: Alertmanager at {url} failed listing silences: "
    "could not connect (ConnectError): nothing was silenced. Try again.",
    "hung": "Alertmanager did not answer within 2 s: the silence may have been made. Submit again: "
    "proxybot looks for it first and makes only what is missing.",
}
FORM = {
    DURATION_BLOCK: {VALUE: option_value("1h")},
    CUSTOM_BLOCK: {VALUE: text_value("")},
    COMMENT_BLOCK: {VALUE: text_value("maintenance")},
}


@pytest.fixture(params=["down", "hung"])
def monitoring_bot(
    request: pytest.FixtureRequest, two_clusters: SimServer, fault_slack: FakeSlack, tmp_path: Path
) -> Iterator[tuple[str, BotProcess, str]]:
    with ExitStack() as stack:
        if request.param == "hung":
            url = stack.enter_context(Unanswering()).url
        else:
            url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        config = fault_config(
            two_clusters,
            tmp_path,
            fault_slack,
            prometheus={"url": url},
            alertmanager={"url": url, "webhook_token": WEBHOOK_TOKEN},
        )
        bot = stack.enter_context(BotProcess(config, tmp_path / "bot.log"))
        yield request.param, bot, url


def test_enrichment_goes_on_without_prometheus_and_silence_is_refused_with_the_reason(
    monitoring_bot: tuple[str, BotProcess, str], fault_slack: FakeSlack
) -> None:
    fault, bot, url = monitoring_bot
    slack = fault_slack
    started = time.monotonic()
    assert post_alert(bot, FAULTY).status_code == 202
    message = message_about(slack, FAULTY)
    first = time.monotonic() - started
    assert first <= BUDGET + MARGIN
    text = thread_text(slack, message)
    assert WINDOW + WHY[fault].format(url=url) in text
    assert "live state unavailable" not in text  # the cluster was read: only the Prometheus parts are missing
    assert "*Verdict:* ✅ healthy" in text

    # Prometheus is known to fail: both clusters' next alerts are not held for another budget each.
    started = time.monotonic()
    for cluster in (FAULTY, HEALTHY):
        assert post_alert(bot, cluster, alertname="ResourceProxyPeerCacheUnsynced").status_code == 202
    later = [
        message_about(slack, cluster, alertname="ResourceProxyPeerCacheUnsynced")
        for cluster in (FAULTY, HEALTHY)
    ]
    both = time.monotonic() - started
    assert both <= 2 * 1.0 + MARGIN  # bot.alerts.prom_enrich.RETRY_WAIT each, at most
    assert all(WINDOW in thread_text(slack, m) for m in later)
    if fault == "hung":
        assert "(the last query, " in thread_text(slack, later[0])

    seconds, answer = silence_through_form(bot, slack, message, FORM)
    assert answer["response_action"] == "errors"
    assert answer["errors"][COMMENT_BLOCK] == SILENCE_WHY[fault].format(url=url)
    assert seconds < 3.0, "answered within Slack's 3 s"
    print(
        f"\n{fault}: first alert {first:.1f} s, the next two {both:.1f} s, Silence refused in {seconds:.1f} s"
    )
    assert bot.running
    assert "Traceback" not in bot.log_text()
