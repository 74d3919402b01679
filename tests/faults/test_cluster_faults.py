"""A tenant cluster's API server misbehaving, one cluster of two, while alerts for both flow.

Injected (one case each) on team-b's API server, which the bot reads `/metrics/syncer` from: it accepts
and never answers, answers after 3 s, answers 500, rejects the token (401), or presents a certificate the
kubeconfig's CA did not sign. team-a, read over the same simulator, stays healthy. What must hold:
- team-b's alert is posted within the enrichment budget (5 s) plus delivery, saying that its live state
  is missing and why (the slow case: read within the budget, nothing missing);
- team-a's alert, sent at the same moment, is posted with its live state; once team-b is known to fail,
  team-a's alerts are no longer held behind team-b's (for the hung case after team-b's failed read has left
  the cache, so team-b's alert reads it again and waits only briefly for it);
- `/proxy status` on team-b's target, sent as Slack sends it, answers within the check's timeout (5 s)
  with the reason;
- the process never crashes and logs no traceback.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sim.server import ApiFault, SimServer
from sim.slack_api import FakeSlack
from tests.e2e.stack import BotProcess, text_of
from tests.faults import upstream_faults
from tests.faults.upstream_faults import (
    FAULTY,
    HEALTHY,
    TARGETS,
    answer_text,
    ask,
    fault_config,
    kubeconfig_of,
    message_about,
    post_alert,
    thread_text,
    wrong_certificate,
)
from tests.waiting import WaitTimeout, wait_until

two_clusters = upstream_faults.two_clusters
fault_slack = upstream_faults.fault_slack

BUDGET = 5.0  # enrichment.timeout_seconds, the default
CHECK_TIMEOUT = 5.0  # bot.reads.context.CHECK_TIMEOUT
LIVE_TTL = 5.0  # how long LiveState keeps a read, failed or not
SLOW = 3.0
# Polling, delivery and a loaded 2-core machine, on top of the budget.
MARGIN = 2.0
MISSING = "live state unavailable: cluster team-b: GET /metrics/syncer "
WHY = {
    "hang": "timed out after 5s",
    "error": "answered 500 (Internal error occurred: etcdserver: request timed out)",
    "unauthorized": "answered 401: the kubeconfig's credentials were rejected",
    "tls": "failed: the TLS certificate of 127.0.0.1:",
}
# On the API server; None: the certificate, a kubeconfig matter.
FAULTS = {
    "hang": ApiFault("hang"),
    "slow": ApiFault("slow", seconds=SLOW),
    "error": ApiFault("error"),
    "unauthorized": ApiFault("unauthorized"),
    "tls": None,
}


@pytest.fixture
def faulty_bot(
    request: pytest.FixtureRequest, two_clusters: SimServer, fault_slack: FakeSlack, tmp_path: Path
) -> Iterator[BotProcess]:
    fault: str = request.param
    config = fault_config(two_clusters, tmp_path, fault_slack)
    injected = FAULTS[fault]
    if injected is None:
        wrong_certificate(kubeconfig_of(config, FAULTY))
    else:
        two_clusters.set_fault(FAULTY, injected)
    bot = BotProcess(config, tmp_path / "bot.log")
    try:
        yield bot.start()
    finally:
        bot.kill()


def sent_and_posted(bot: BotProcess, slack: FakeSlack, alertname: str) -> dict[str, float]:
    """Both clusters' alerts sent at once: the seconds until each one's message was in Slack."""
    started = time.monotonic()
    for cluster in (FAULTY, HEALTHY):
        assert post_alert(bot, cluster, alertname=alertname).status_code == 202
    posted: dict[str, float] = {}

    def both_posted() -> bool:
        for cluster in (FAULTY, HEALTHY):
            if cluster not in posted and _has(slack, cluster, alertname):
                posted[cluster] = time.monotonic() - started
        return len(posted) == 2

    left = started + BUDGET + LIVE_TTL + 2 * MARGIN - time.monotonic()
    with contextlib.suppress(WaitTimeout):  # the assertion below says which is missing
        wait_until(both_posted, left, f"both clusters' {alertname} in Slack", interval=0.02)
    assert len(posted) == 2, f"only {sorted(posted)} posted"
    return posted


def _has(slack: FakeSlack, cluster: str, alertname: str) -> bool:
    """Whether the alert is in Slack: its own message, or a line of the open incident's message it joined
    (a second alert of the same cause on the same target)."""
    channel = upstream_faults.CHANNELS[cluster]
    return any(
        f"on {TARGETS[cluster]} (" in m.text and alertname in text_of(m) for m in slack.top_level(channel)
    )


@pytest.mark.parametrize("faulty_bot", list(FAULTS), indirect=True)
def test_a_faulty_cluster_api_is_named_in_its_alert_and_the_other_cluster_is_unaffected(
    faulty_bot: BotProcess, fault_slack: FakeSlack, request: pytest.FixtureRequest
) -> None:
    fault = request.node.callspec.params["faulty_bot"]
    bot, slack = faulty_bot, fault_slack

    first = sent_and_posted(bot, slack, "ResourceProxyNoHealthyPeers")
    assert first[FAULTY] <= BUDGET + MARGIN, first
    faulty = thread_text(slack, message_about(slack, FAULTY))
    if fault == "slow":
        assert "live state unavailable" not in faulty  # 3 s is within the budget: read, not missing
        assert "*Verdict:* ✅ healthy" in faulty
    else:
        assert MISSING + WHY[fault] in faulty
        assert "*Verdict:* ❔ unknown" in faulty
    healthy = thread_text(slack, message_about(slack, HEALTHY))
    assert "live state unavailable" not in healthy
    assert "*Verdict:* 🔴 target_down" in healthy
    # Sent together, team-a's alert waits at most for team-b's enrichment (the worker takes one at a time).
    assert first[HEALTHY] <= BUDGET + MARGIN, first

    # team-b's failure is known; past the cache of the hung (or slow) read its next alert reads it again.
    if fault in ("hang", "slow"):
        time.sleep(LIVE_TTL)  # time itself is awaited: the bot's cached read ages out on its own clock
    later = sent_and_posted(bot, slack, "ResourceProxyPeerCacheUnsynced")
    held = SLOW if fault == "slow" else 1.0  # a known failure holds the next read 1 s (bot.live.RETRY_WAIT)
    assert later[HEALTHY] <= held + MARGIN, later

    seconds, answer = ask(bot, slack, f"status {TARGETS[FAULTY]}")
    said = answer_text(answer)
    if fault == "slow":
        # Two round trips in a row (an APIService, then its Service), 3 s each, all answered.
        assert seconds <= 2 * SLOW + MARGIN
        assert "unavailable" not in said
    else:
        assert seconds <= CHECK_TIMEOUT + MARGIN
        assert "cluster team-b/team-b-0: GET /metrics/syncer " + WHY[fault] in said
    print(f"\n{fault}: posted {first} then {later} (s after the webhooks); /proxy status {seconds:.1f} s")
    assert bot.running
    assert "Traceback" not in bot.log_text()
