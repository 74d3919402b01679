"""Changes and command answers rendered for Slack, checked against the fake Slack."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_sdk import WebClient
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.alerts_catalog import ALERTS, DISCOVERY_DEGRADED, NO_HEALTHY_PEERS
from bot.domain.diagnosis import diagnose
from bot.domain.messages import (
    ActionRef,
    AlertGroupView,
    AlertView,
    FindingsReport,
    GroupChange,
    GroupStatus,
    LiveRead,
)
from bot.domain.snapshot import PEER_CACHE_SYNCED, PEERS, ProxySnapshot
from bot.errors import InputError
from bot.render.alert_details import details_reply
from bot.render.alert_message import alert_group_message
from bot.render.slack import (
    change_reply,
    findings_message,
)
from tests.fakes.alert_views import GV, HOSTILE, NOW, T, alert, all_text, group, mrkdwn_texts, snapshot
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_limits import limit_problems

# -- what every message keeps inert (the alert message itself: test_alert_message.py) ----------------


@pytest.mark.parametrize(
    "value",
    ["not json", "[]", '{"c":"a","t":"p/n"}', '{"c":"a","t":"../x","g":"0123456789abcdef"}',
     '{"c":"a","t":"p/n","g":"nothex"}', '{"c":"<!x>","t":null,"g":"0123456789abcdef"}',
     '{"c":"a","t":"p/n","g":"0123456789abcdef","x":1}'],
)  # fmt: skip
def test_tampered_button_values_are_refused(value: str) -> None:
    with pytest.raises(InputError):
        ActionRef.decode(value)


def test_hostile_labels_and_annotations_are_inert_everywhere() -> None:
    labels = {"target": HOSTILE[0], "group_version": HOSTILE[1], "pod": HOSTILE[2], "severity": "critical"}
    alerts = (
        alert(NO_HEALTHY_PEERS, labels, snap=snapshot(target=HOSTILE[0], gv=HOSTILE[1])),
        alert(HOSTILE[1], {"foo": HOSTILE[3], HOSTILE[4]: "x"}, annotations={"summary": HOSTILE[0]}),
    )
    view = group(*alerts, cluster=HOSTILE[2], live=LiveRead.missing(HOSTILE[4]))
    findings = diagnose(snapshot(target=HOSTILE[0], gv=HOSTILE[1]))
    messages = [
        alert_group_message(view, NOW),
        details_reply(view, NOW),
        change_reply(GroupChange(view.group_key, NOW, new=alerts, resolved=alerts), NOW),
        findings_message(FindingsReport(HOSTILE[0], tuple(findings), view.live, notes=HOSTILE), NOW),
    ]
    for msg in messages:
        texts = mrkdwn_texts(msg)
        assert all("<" not in t and ">" not in t for t in texts), texts
        assert all(not re.search(r"&(?!amp;|lt;|gt;)", t) for t in texts), texts
        assert all("\n*Next step:* forged" not in t and "```" not in t for t in texts), texts
        assert all(not re.search(r"[@#](here|general)", t) for t in texts), texts
        assert "\u202e" not in all_text(msg)
        assert "&lt;!channel&gt;" in all_text(msg) or "&lt;https://evil" in all_text(msg)


# -- thread replies, command answers ---------------------------------------------------------------


def test_change_reply_lists_new_and_resolved() -> None:
    change = GroupChange(
        "k", NOW, new=(alert(DISCOVERY_DEGRADED),), resolved=(alert(),),
        group_status=GroupStatus.RESOLVED, started_at=NOW - timedelta(minutes=30),
    )  # fmt: skip
    msg = change_reply(change, NOW)
    lines = msg.blocks[0]["text"]["text"].split("\n")
    assert lines[0].startswith(f"🟠 New: *{DISCOVERY_DEGRADED}* on `{T}`")
    assert lines[1] == f"✅ Resolved: *{NO_HEALTHY_PEERS}* on `{T}` (`{GV}`)"
    assert lines[2] == "All resolved after 30 min."
    assert msg.text == "1 new, 1 resolved"


def test_a_resolve_says_one_duration_in_the_message_and_its_reply() -> None:
    # The tour showed "Resolved after 29 s" on the message beside "All resolved after 32 s" in its thread:
    # the reply counted to when the notification was applied, the message to when the alerts ended.
    started, ended = NOW - timedelta(seconds=60), NOW - timedelta(seconds=31)
    view = replace(group(status=GroupStatus.RESOLVED), started_at=started, resolved_at=ended)
    change = GroupChange(
        "k", NOW, resolved=(alert(),), group_status=GroupStatus.RESOLVED, started_at=started,
        ended_at=view.ended_at(NOW),
    )  # fmt: skip
    assert "*Resolved after 29 s*" in alert_group_message(view, NOW).blocks[1]["text"]["text"]
    assert "All resolved after 29 s." in change_reply(change, NOW).blocks[0]["text"]["text"]


def test_findings_answer_details_the_worst_and_lists_the_rest() -> None:
    merged = {
        name: {**snapshot().samples[name], **snapshot("shop/billing", healthy=3, quarantined=0).samples[name]}
        for name in (PEERS, PEER_CACHE_SYNCED)
    }
    snap = ProxySnapshot(samples=merged)
    report = FindingsReport("status", tuple(diagnose(snap)), LiveRead.read(NOW, "vc-0"), "prod-a", ("a <b>",))
    msg = findings_message(report, NOW)
    text = all_text(msg)
    assert msg.blocks[0]["text"]["text"] == "🔴 status"
    assert "1 critical" in text
    assert "1 ok" in text
    assert "✅ *shop/billing: healthy* (ok)" in text
    assert "*Next step:*" in text
    assert "a &lt;b&gt;" in text
    assert "cluster `prod-a`" in text


# -- against the fake Slack ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(channels=["C1", "C2", "C9"]) as fake:
        yield fake


_text = st.text(max_size=24)
_huge = st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=12), st.integers(1, 2500))
_value = st.one_of(_text, _huge, st.sampled_from(HOSTILE))
_names = st.one_of(st.sampled_from(sorted(ALERTS)), _value)


@st.composite
def alert_views(draw: st.DrawFn) -> AlertView:
    name = draw(_names)
    labels = draw(
        st.dictionaries(st.sampled_from(["target", "group_version", "pod", "severity", "x"]), _value)
    )
    labels |= draw(st.dictionaries(_text, _value, max_size=4))
    read = draw(st.booleans())
    snap = snapshot(labels.get("target", T), labels.get("group_version", GV)) if read else None
    status = draw(st.sampled_from(GroupStatus))
    notes = draw(st.dictionaries(st.sampled_from(["summary", "description"]), _value))
    return alert(
        name, labels, status=status, snap=snap, annotations=notes, minutes=draw(st.integers(0, 10**5))
    )


@st.composite
def group_views(draw: st.DrawFn) -> AlertGroupView:
    alerts = draw(st.lists(alert_views(), min_size=1, max_size=6))
    alerts *= draw(st.sampled_from([1, 1, 40]))  # sometimes a huge group
    live = draw(
        st.one_of(st.builds(LiveRead.read, st.just(NOW), _value), st.builds(LiveRead.missing, _value))
    )
    return group(
        *alerts,
        live=live,
        cluster=draw(_value),
        group_key=draw(_value),
        status=draw(st.sampled_from(GroupStatus)),
        truncated_alerts=draw(st.integers(0, 10**6)),
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(view=group_views())
def test_any_group_is_accepted_by_slack(slack: FakeSlack, view: AlertGroupView) -> None:
    web = WebClient(token=slack.bot_token, base_url=slack.api_url, timeout=10)
    for msg in (alert_group_message(view, NOW), details_reply(view, NOW)):
        assert limit_problems(msg.as_kwargs()) == []
        assert all("<" not in t and ">" not in t for t in mrkdwn_texts(msg))
        assert web.chat_postMessage(channel="C1", **msg.as_kwargs())["ok"]
    change = GroupChange(view.group_key, NOW, new=view.alerts, resolved=view.alerts, started_at=NOW)
    assert web.chat_postMessage(channel="C1", **change_reply(change, NOW).as_kwargs())["ok"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(
    about=st.lists(st.tuples(_value, _names), max_size=5),
    times=st.integers(1, 60),
    title=_value,
    notes=st.lists(_value, max_size=30),
)
def test_any_answer_is_accepted_by_slack(
    slack: FakeSlack, about: list[tuple[str, str]], times: int, title: str, notes: list[str]
) -> None:
    web = WebClient(token=slack.bot_token, base_url=slack.api_url, timeout=10)
    findings = tuple(f for target, gv in about for f in diagnose(snapshot(target or T, gv)))
    msg = findings_message(
        FindingsReport(title, findings * times, LiveRead.missing(title), title, tuple(notes)), NOW
    )
    assert limit_problems(msg.as_kwargs()) == []
    assert web.chat_postMessage(channel="C1", **msg.as_kwargs())["ok"]


def test_lone_surrogates_from_json_labels_still_post(slack: FakeSlack) -> None:
    odd = json.loads('"\\ud800 pod"')
    view = group(alert("X\udfff", {"target": odd, "pod": odd}), live=LiveRead.missing(odd), cluster=odd)
    web = WebClient(token=slack.bot_token, base_url=slack.api_url, timeout=10)
    assert web.chat_postMessage(channel="C2", **alert_group_message(view, NOW).as_kwargs())["ok"]
    assert "\ufffd pod" in slack.top_level("C2")[-1].text


async def test_every_kind_of_message_posts_updates_and_threads(slack: FakeSlack) -> None:
    web = AsyncWebClient(token=slack.bot_token, base_url=slack.api_url, timeout=10)
    firing = group(*(alert(labels={"target": f"p/t{i}", "group_version": GV}) for i in range(300)))
    resolved = group(alert(status=GroupStatus.RESOLVED), status=GroupStatus.RESOLVED)
    posted = await web.chat_postMessage(channel="C9", **alert_group_message(firing, NOW).as_kwargs())
    await web.chat_update(channel="C9", ts=posted["ts"], **alert_group_message(resolved, NOW).as_kwargs())
    replies = [
        change_reply(GroupChange(firing.group_key, NOW, resolved=firing.alerts), NOW),
        findings_message(FindingsReport("status", tuple(diagnose(snapshot())), firing.live), NOW),
    ]
    for reply in replies:
        await web.chat_postMessage(channel="C9", thread_ts=posted["ts"], **reply.as_kwargs())
    [top] = slack.top_level("C9")
    assert top.text.startswith("RESOLVED")
    assert len(top.versions) == 1
    assert top.versions[0]["text"].startswith("FIRING")
    assert len(slack.thread("C9", posted["ts"])) == 2
