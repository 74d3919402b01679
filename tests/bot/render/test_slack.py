"""Alert groups, changes, command answers and storms rendered for Slack, checked against the fake Slack."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_sdk import WebClient
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.alerts_catalog import ALERTS, DISCOVERY_DEGRADED, NO_HEALTHY_PEERS, PROBE_FAILING
from bot.domain.diagnosis import diagnose
from bot.domain.messages import (
    ActionRef,
    AlertGroupView,
    AlertView,
    FindingsReport,
    GroupChange,
    GroupStatus,
    LiveRead,
    group_id,
)
from bot.domain.snapshot import PEER_CACHE_SYNCED, PEERS, ProxySnapshot
from bot.errors import InputError
from bot.render.blocks import Message
from bot.render.slack import (
    ACTION_PATH,
    ACTION_PROBE,
    ACTION_SILENCE,
    alert_group_message,
    change_reply,
    findings_message,
)
from tests.fakes.alert_views import GV, HOSTILE, NOW, T, alert, group, snapshot
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_limits import limit_problems


def mrkdwn_texts(msg: Message) -> list[str]:
    """The fallback and every mrkdwn text: the places where Slack would honour `<!channel>` or links."""
    found = [msg.text]
    for block in msg.blocks:
        for obj in [block.get("text"), *block.get("fields", []), *block.get("elements", [])]:
            if isinstance(obj, dict) and obj.get("type") == "mrkdwn":
                found.append(obj["text"])
    return found


def all_text(msg: Message) -> str:
    return json.dumps(msg.as_kwargs(), ensure_ascii=False)


def buttons(msg: Message) -> list[dict[str, Any]]:
    return [e for b in msg.blocks if b["type"] == "actions" for e in b["elements"]]


# -- the alert group message -----------------------------------------------------------------------


def test_firing_group_says_what_where_since_now_cause_step_and_guide() -> None:
    msg = alert_group_message(group(), NOW)
    head = msg.blocks[0]
    assert head["type"] == "header"
    assert head["text"]["text"] == f"🔴 FIRING: {NO_HEALTHY_PEERS} · {T}"
    text = all_text(msg)
    for words in (
        "*Cluster:* `prod-a`",
        f"*Target:* `{T}`",
        f"*Group/version:* `{GV}`",
        "*Replica read:* `vc-0`",
        "*Since:* 2024-05-01 10:02 UTC (12 min ago)",
        f"*Now:* still broken: still no healthy peer for {GV}",
        "*Likely cause:*",
        "*Next step:*",
        "*Guide:* _Monitor the proxy &gt; Alert starting points_",
        "peers: healthy 0, quarantined 2, half_open 0",
        "Live state read 10:13:30 UTC (30 s ago) from replica `vc-0`",
    ):
        assert words in text, words
    assert msg.text == f"FIRING: {NO_HEALTHY_PEERS} on {T} (prod-a)"
    assert limit_problems(msg.as_kwargs()) == []


def test_evidence_is_shown_as_fields() -> None:
    msg = alert_group_message(group(), NOW)
    field_texts = [f["text"] for b in msg.blocks for f in b.get("fields", [])]
    assert f"{GV}: peers: healthy 0, quarantined 2, half_open 0" in field_texts


def test_live_state_unavailable_says_why() -> None:
    view = group(alert(snap=None), live=LiveRead.missing("prod-a unreachable: timed out after 5 s"))
    msg = alert_group_message(view, NOW)
    context = [b for b in msg.blocks if b["type"] == "context"][-1]
    assert (
        context["elements"][0]["text"] == "⚠️ live state unavailable: prod-a unreachable: timed out after 5 s"
    )
    assert "the client cluster could not be read" in all_text(msg)


def test_reading_another_replica_than_the_alerting_pod_is_said() -> None:
    msg = alert_group_message(group(live=LiveRead.read(NOW, "vc-1")), NOW)
    assert "*Replica read:* `vc-1` (not the alerting pod)" in all_text(msg)


def test_buttons_carry_action_ids_and_only_a_validated_reference() -> None:
    key = '{}:{alertname="ResourceProxyNoHealthyPeers"}'
    found = buttons(alert_group_message(group(group_key=key), NOW))
    assert [(b["text"]["text"], b["action_id"]) for b in found] == [
        ("Probe now", ACTION_PROBE),
        ("Path check", ACTION_PATH),
        ("Silence 1h", ACTION_SILENCE),
    ]
    refs = {ActionRef.decode(b["value"]) for b in found}
    assert refs == {ActionRef("prod-a", T, group_id(key))}


def test_hostile_target_and_cluster_never_reach_a_button() -> None:
    bad = alert(labels={"target": "<!channel>/../secrets", "group_version": GV})
    found = buttons(alert_group_message(group(bad, cluster="prod a <x>"), NOW))
    assert {json.loads(b["value"])["t"] for b in found} == {None}
    assert {json.loads(b["value"])["c"] for b in found} == {None}


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


def test_unknown_alert_is_posted_plainly_with_its_labels_and_annotations() -> None:
    odd = alert(
        "KubeNodeNotReady", {"node": "n1", "severity": "warning"}, annotations={"summary": "node down"}
    )
    msg = alert_group_message(group(odd), NOW)
    text = all_text(msg)
    assert "🟠 FIRING: KubeNodeNotReady" in text
    assert "Not one of the guide's proxy alerts" in text
    assert "*Summary:* node down" in text
    assert "*node*\\nn1" in text


def test_every_guide_alert_gets_its_own_explanation() -> None:
    seen = set()
    for name in ALERTS:
        msg = alert_group_message(group(alert(name, snap=snapshot())), NOW)
        meaning = next(line for line in all_text(msg).split("\\n") if line.startswith("*What it means:*"))
        seen.add(meaning)
    assert len(seen) == len(ALERTS)


def test_many_alerts_are_detailed_three_and_counted_beyond() -> None:
    alerts = tuple(alert(labels={"target": f"p/t{i:03}", "group_version": GV}) for i in range(200))
    msg = alert_group_message(group(*alerts), NOW)
    text = all_text(msg)
    assert text.count("*What it means:*") == 3
    assert "… +185 more" in text  # 197 others, 12 listed
    assert "`p/t000`, `p/t001`, `p/t002` +197 more" in text
    assert limit_problems(msg.as_kwargs()) == []


def test_truncated_alerts_are_mentioned() -> None:
    msg = alert_group_message(group(truncated_alerts=7), NOW)
    assert "Alertmanager left 7 more alerts out of this notification" in all_text(msg)


def test_resolved_group_edits_into_resolved_after() -> None:
    done = alert(status=GroupStatus.RESOLVED, snap=snapshot(healthy=2, quarantined=0))
    msg = alert_group_message(group(done, status=GroupStatus.RESOLVED), NOW)
    assert msg.blocks[0]["text"]["text"] == f"✅ RESOLVED: {NO_HEALTHY_PEERS} · {T}"
    text = all_text(msg)
    assert "*Resolved after 12 min* (2024-05-01 10:02 UTC → 2024-05-01 10:14 UTC)" in text
    assert f"on `{T}` (`{GV}`): resolved after 12 min" in text
    assert [b["action_id"] for b in buttons(msg)] == [ACTION_PROBE, ACTION_PATH]
    assert msg.text == f"RESOLVED: {NO_HEALTHY_PEERS} on {T} (prod-a) after 12 min"


def test_firing_group_with_some_resolved_counts_both() -> None:
    msg = alert_group_message(group(alert(), alert(status=GroupStatus.RESOLVED)), NOW)
    assert "*Alerts:* 1 firing, 1 resolved" in all_text(msg)


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


def test_probe_alert_without_target_still_gets_buttons() -> None:
    probe = alert(PROBE_FAILING, {"namespace": "vcluster-a", "cronjob": "proxy-probe"}, snap=snapshot())
    found = buttons(alert_group_message(group(probe), NOW))
    assert [ActionRef.decode(b["value"]).target for b in found] == [None, None, None]


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
    msg = alert_group_message(view, NOW)
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
