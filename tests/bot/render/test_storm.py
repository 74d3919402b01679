"""Storm summaries and their thread lines rendered for Slack, checked against the fake Slack."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_sdk import WebClient

from bot.domain.alerts_catalog import ALERTS, DISCOVERY_DEGRADED, NO_HEALTHY_PEERS
from bot.domain.findings import Severity
from bot.domain.messages import LiveRead
from bot.domain.storm_summary import StormEntry, StormView
from bot.render.blocks import Message
from bot.render.storm import storm_group_line, storm_message
from tests.fakes.alert_views import GV, HOSTILE, NOW, T, alert, group, snapshot
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_limits import limit_problems


def mrkdwn_texts(msg: Message) -> list[str]:
    found = [msg.text]
    for block in msg.blocks:
        for obj in [block.get("text"), *block.get("fields", []), *block.get("elements", [])]:
            if isinstance(obj, dict) and obj.get("type") == "mrkdwn":
                found.append(obj["text"])
    return found


def all_text(msg: Message) -> str:
    return json.dumps(msg.as_kwargs(), ensure_ascii=False)


def storm(n: int, clusters: int) -> StormView:
    entries = tuple(
        StormEntry(
            NO_HEALTHY_PEERS if i % 2 else DISCOVERY_DEGRADED,
            Severity.CRITICAL if i % 2 else Severity.WARNING,
            f"g{i}",
            f"p/t{i % 500:03}",
            f"c{i % clusters}",
        )
        for i in range(n)
    )
    return StormView(entries, NOW - timedelta(minutes=2))


def test_storm_summary_counts_worst_first_with_more_and_cause() -> None:
    msg = storm_message(storm(1000, 3), NOW)
    text = all_text(msg)
    assert msg.blocks[0]["text"]["text"] == "🌩️ Alert storm: 1000 alerts"
    assert "*1000 alerts in 1000 groups on 500 targets across 3 clusters*" in text
    by_alert = msg.blocks[2]["text"]["text"].split("\n")
    assert by_alert[1:] == [
        f"🔴 *{NO_HEALTHY_PEERS}*: 500 alerts on 250 targets",
        f"🟠 *{DISCOVERY_DEGRADED}*: 500 alerts on 250 targets",
    ]
    by_target = msg.blocks[3]["text"]["text"].split("\n")
    assert by_target[1].startswith("🔴 `p/t001`: 2 alerts")
    assert by_target[-1] == "… +488 more"
    assert "shared platform path" in text
    assert limit_problems(msg.as_kwargs()) == []


def test_storm_in_one_client_blames_that_client_and_ends() -> None:
    over = storm(10, 1)
    over = StormView(over.entries, over.started_at, NOW - timedelta(minutes=1))
    msg = storm_message(over, NOW)
    assert msg.blocks[0]["text"]["text"] == "🌤️ Alert storm over: 10 alerts"
    assert "*Lasted:* 1 min" in all_text(msg)
    assert "one client cluster" in all_text(msg)


def test_storm_group_line_is_one_compact_line() -> None:
    msg = storm_group_line(group(alert(snap=snapshot()), alert()), NOW)
    assert msg.blocks == ()
    assert msg.text.startswith(
        f"🔴 *{NO_HEALTHY_PEERS}* on `{T}` (`{GV}`), since 12 min ago: still no healthy"
    )
    assert msg.text.endswith("(+1 more alert) · `prod-a`")


def test_hostile_labels_are_inert_in_the_summary_and_lines() -> None:
    labels = {"target": HOSTILE[0], "group_version": HOSTILE[1], "pod": HOSTILE[2], "severity": "critical"}
    alerts = (
        alert(NO_HEALTHY_PEERS, labels, snap=snapshot(target=HOSTILE[0], gv=HOSTILE[1])),
        alert(HOSTILE[1], {"foo": HOSTILE[3], HOSTILE[4]: "x"}, annotations={"summary": HOSTILE[0]}),
    )
    view = group(*alerts, cluster=HOSTILE[2], live=LiveRead.missing(HOSTILE[4]))
    entries = tuple(StormEntry(a.name, a.severity, "g", a.target, HOSTILE[2]) for a in alerts)
    for msg in (storm_group_line(view, NOW), storm_message(StormView(entries, NOW), NOW)):
        texts = mrkdwn_texts(msg)
        assert all("<" not in t and ">" not in t for t in texts), texts
        assert all(not re.search(r"&(?!amp;|lt;|gt;)", t) for t in texts), texts
        assert all("\n*Next step:* forged" not in t and "```" not in t for t in texts), texts
        assert all(not re.search(r"[@#](here|general)", t) for t in texts), texts
        assert "\u202e" not in all_text(msg)
        assert "&lt;!channel&gt;" in all_text(msg) or "&lt;https://evil" in all_text(msg)


@pytest.fixture(scope="module")
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(channels=["C1"]) as fake:
        yield fake


_text = st.text(max_size=24)
_huge = st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=12), st.integers(1, 2500))
_value = st.one_of(_text, _huge, st.sampled_from(HOSTILE))
_names = st.one_of(st.sampled_from(sorted(ALERTS)), _value)
_storm_entries = st.builds(StormEntry, _names, st.sampled_from(Severity), _text, _value, _value)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(entries=st.lists(_storm_entries, max_size=50), times=st.integers(1, 60))
def test_any_storm_is_accepted_by_slack(slack: FakeSlack, entries: list[StormEntry], times: int) -> None:
    web = WebClient(token=slack.bot_token, base_url=slack.api_url, timeout=10)
    msg = storm_message(StormView(tuple(entries) * times, NOW), NOW)
    assert limit_problems(msg.as_kwargs()) == []
    assert web.chat_postMessage(channel="C1", **msg.as_kwargs())["ok"]
