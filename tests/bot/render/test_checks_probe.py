"""The probe's answer offers the commands of where it is read: Slack's in Slack (a `/proxy probe` or *Probe
now*), the console's where the console prints it."""

from __future__ import annotations

import json

from bot.checks.probe import probe_request
from bot.checks.probe_run import probe_with
from bot.clients.kube import RawResponse
from bot.domain.parser import parse_syncer
from bot.domain.paths import ApiPath
from bot.domain.probe_result import ProbeResult
from bot.live import ClusterRead
from bot.render.blocks import Message
from bot.render.checks_probe import probe_message
from bot.render.layout import mrkdwn_to_text
from bot.render.terminal import Style, show, show_message
from sim.slack_api import iter_texts
from tests.fakes.probe_settings import SETTINGS, TARGET

UNAVAILABLE = {
    "kind": "Status",
    "code": 503,
    "message": 'target tenant cluster "crd-store" for example.com/v1 is unavailable',
}


class Unavailable:
    """Every GET answers the proxy's 503."""

    async def get(self, path: ApiPath, *, timeout: float) -> RawResponse:
        return RawResponse(503, json.dumps(UNAVAILABLE).encode(), {"Retry-After": "1"}, 0.01)


def _live(healthy: int) -> ClusterRead:
    labels = f'target="{TARGET}",group_version="example.com/v1"'
    page = (
        f'vcluster_proxy_peers{{{labels},state="healthy"}} {healthy}\n'
        f"vcluster_proxy_peer_cache_synced{{{labels}}} 1\n"
    )
    return ClusterRead("team-a", 0.0, parse_syncer(page), None, None)


async def _unavailable(healthy: int = 0, group_version: str | None = None) -> ProbeResult:
    async def live() -> ClusterRead:
        return _live(healthy)

    request = probe_request(SETTINGS, TARGET, group_version=group_version)
    return await probe_with(Unavailable(), request, live)


def _slack_words(msg: Message) -> str:
    return "\n".join(mrkdwn_to_text(text, Style()) for text in iter_texts(list(msg.blocks)))


async def test_a_503_answered_in_slack_offers_slack_commands_and_a_whole_probe_series() -> None:
    """The tour's *Probe now* answer said "(proxybot path ...)" and "probe again with --repeat" to a person
    in Slack, where neither is something to type."""
    for healthy in (0, 1):  # the live state pointing at the peers, and pointing nowhere
        words = _slack_words(probe_message(await _unavailable(healthy)))
        assert f"/proxy probe {TARGET} --repeat 3" in words
        assert f"/proxy reasons {TARGET}" in words
        assert f"/proxy logs {TARGET}" in words
        assert "proxybot " not in words
        assert "with --repeat" not in words


async def test_the_series_offered_repeats_the_probe_asked() -> None:
    result = await _unavailable(group_version="data.example.com/v1alpha1")
    assert f"`/proxy probe {TARGET} --gv data.example.com/v1alpha1 --repeat 3`" in result.next_step


async def test_the_console_prints_the_same_answer_with_its_own_commands() -> None:
    msg = probe_message(await _unavailable())
    printed = " ".join(show(msg).split())  # the terminal wraps long lines
    assert f"proxybot probe {TARGET} --repeat 3" in printed
    assert f"proxybot path {TARGET}" in printed
    assert f"proxybot status {TARGET}" in printed
    assert "/proxy " not in printed
    # The demo prints what Slack got, as Slack shows it.
    assert f"/proxy probe {TARGET} --repeat 3" in " ".join(show_message(msg.text, msg.blocks).split())


def test_the_console_keeps_slack_only_commands_and_other_slashes() -> None:
    msg = Message(
        "`/proxy silence platform/x 1h` or `/proxy status`",
        ({"type": "section", "text": {"type": "mrkdwn", "text": "see a/proxy status b, `/proxy ack`"}},),
    )
    assert show(msg) == "see a/proxy status b, /proxy ack"
    assert show(Message(msg.text)) == "/proxy silence platform/x 1h or proxybot status"
