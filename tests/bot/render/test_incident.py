"""Incidents and flapping in words: the incident's lines on its message, a member's details reply, the
flapping note."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import timedelta

from bot.domain.alerts_catalog import DISCOVERY_DEGRADED, PEER_CHURN, PROBE_FAILING
from bot.domain.findings import Severity
from bot.domain.incident import Cause, IncidentLine, IncidentView
from bot.domain.messages import GroupStatus
from bot.render.alert_details import member_details_reply
from bot.render.alert_message import MAX_LINES, alert_group_message
from bot.render.blocks import Message
from bot.render.incident import SHOWN_MEMBERS, flapping_reply, incident_lines
from bot.render.terminal import show
from tests.fakes.alert_views import GV, HOSTILE, NOW, T, alert, group, snapshot
from tests.fakes.slack_limits import limit_problems


def line(name: str = DISCOVERY_DEGRADED, **kw: object) -> IncidentLine:
    fields: dict[str, object] = {
        "names": (name,),
        "target": T,
        "group_versions": (GV,),
        "severity": Severity.WARNING,
        "firing": True,
        "since": NOW - timedelta(minutes=3),
    }
    fields.update(kw)
    return IncidentLine(**fields)  # type: ignore[arg-type]


def text_of(msg: Message) -> str:
    return json.dumps(msg.as_kwargs(), ensure_ascii=False)


def test_an_incident_says_how_many_alerts_share_which_cause_and_lists_the_others() -> None:
    probe = line(PROBE_FAILING, target=None, group_versions=(), cronjob="vcluster-a/proxy-probe")
    done = line(PEER_CHURN, firing=False, resolved_at=NOW - timedelta(minutes=1))
    view = IncidentView(Cause.PEER_FEED, ("A", DISCOVERY_DEGRADED, PROBE_FAILING), (line(), probe, done))
    lines = incident_lines(view, NOW)
    assert lines[0].startswith("*3 alert rules, one cause:* the client's peer feed (no current peer list)")
    assert lines[1] == (f"↳ also firing: 🟠 *{DISCOVERY_DEGRADED}* on `{T}` (`{GV}`), since 3 min ago")
    assert lines[2].endswith("(CronJob `vcluster-a/proxy-probe`), since 3 min ago")
    assert lines[3] == f"↳ ✅ *{PEER_CHURN}* on `{T}` (`{GV}`): resolved after 2 min"


def test_a_member_of_another_client_says_whose_it_is() -> None:
    view = IncidentView(Cause.ENDPOINTS, ("A",), (line(cluster="team-b"),))
    assert incident_lines(view, NOW)[1] == (
        f"↳ also firing: 🟠 *{DISCOVERY_DEGRADED}* on `{T}` (`{GV}`) from `team-b`, since 3 min ago"
    )


def test_flapping_shows_the_count_on_the_message_and_on_a_members_line() -> None:
    assert incident_lines(IncidentView(flaps=1), NOW) == []  # once is not flapping
    [own] = incident_lines(IncidentView(flaps=3), NOW)
    assert own == "🔁 *Flapping: 3 times in the last hour* (fired again after resolving)"
    member = incident_lines(IncidentView(names=("A", "B"), members=(line(flaps=2),)), NOW)
    assert member[1].endswith("· 🔁 flapping: 2 times in the last hour")


def test_the_incident_shows_on_the_firing_and_the_resolved_message() -> None:
    incident = IncidentView(Cause.ENDPOINTS, ("A", "B"), (line(),), flaps=2)
    firing = group(alert(snap=snapshot()), incident=incident)
    resolved = replace(
        firing, status=GroupStatus.RESOLVED, alerts=(alert(status=GroupStatus.RESOLVED),), resolved_at=NOW
    )
    for view in (firing, resolved):
        text = text_of(alert_group_message(view, NOW))
        assert "*2 alert rules, one cause:* the target's endpoints (no healthy peer)" in text
        assert "Flapping: 2 times in the last hour" in text
    assert "one cause" not in text_of(alert_group_message(group(alert(snap=snapshot())), NOW))


def test_many_members_are_counted_beyond_the_first_lines_within_slacks_limits() -> None:
    members = tuple(line(f"Alert{i}") for i in range(20))
    incident = IncidentView(Cause.ENDPOINTS, tuple(m.names[0] for m in members), members)
    msg = alert_group_message(group(alert(snap=snapshot()), incident=incident), NOW)
    text = text_of(msg)
    shown = text.count("↳ also firing:")
    assert 1 <= shown <= SHOWN_MEMBERS  # as many as the message's budget leaves room for
    assert f"… +{20 - shown} more in the thread" in text
    assert show(msg).count("\n") + 1 <= MAX_LINES
    assert limit_problems(msg.as_kwargs()) == []


def test_a_members_details_reply_says_what_joined_the_shared_cause_and_every_detail() -> None:
    joined = group(alert(DISCOVERY_DEGRADED, snap=snapshot()))
    msg = member_details_reply(joined, Cause.ENDPOINTS, NOW)
    text = text_of(msg)
    assert f"*Details:* 🟠 FIRING: {DISCOVERY_DEGRADED} · {T}" in text  # the header comes first
    assert f"↳ Joined this incident: 🟠 *{DISCOVERY_DEGRADED}* on `{T}` (`{GV}`), since 12 min ago" in text
    assert "*Same cause:* no healthy peer" in text
    assert "Silence… on the incident's message silences it too" in text
    # The group's details as its own details reply would carry them: how it stands, the peer caches read,
    # what the alert means.
    assert "*Now:*" in text
    assert "*Peer caches read*" in text
    assert f"*{DISCOVERY_DEGRADED}:* " in text
    assert limit_problems(msg.as_kwargs()) == []


def test_a_resolved_members_details_reply_turns_its_header_and_join_line_resolved() -> None:
    view = group(alert(DISCOVERY_DEGRADED, status=GroupStatus.RESOLVED, snap=snapshot()))
    view = replace(view, status=GroupStatus.RESOLVED, resolved_at=NOW - timedelta(minutes=2))
    text = text_of(member_details_reply(view, Cause.ENDPOINTS, NOW))
    assert f"*Details:* ✅ RESOLVED: {DISCOVERY_DEGRADED} · {T}" in text
    assert (
        f"↳ Joined this incident: ✅ *{DISCOVERY_DEGRADED}* on `{T}` (`{GV}`): resolved after 10 min" in text
    )
    assert "FIRING" not in text


def test_a_joining_probe_is_named_by_its_cronjob() -> None:
    labels = {"namespace": "vcluster-a", "cronjob": "proxy-probe", "severity": "critical"}
    text = text_of(member_details_reply(group(alert(PROBE_FAILING, labels)), Cause.PEER_FEED, NOW))
    assert f"*{PROBE_FAILING}* (CronJob `vcluster-a/proxy-probe`), since 12 min ago" in text


def test_the_flapping_note_counts_and_promises_quiet() -> None:
    text = text_of(flapping_reply(group(alert(PEER_CHURN, snap=snapshot())), 2))
    assert f"*{PEER_CHURN}* on `{T}` (`{GV}`) is flapping: it fired again 2 times in the last hour" in text
    assert "at most one note an hour" in text


def test_hostile_names_are_inert_in_every_incident_text() -> None:
    hostile = line(HOSTILE[0], target=HOSTILE[5], group_versions=(HOSTILE[6], HOSTILE[8]), flaps=4)
    incident = IncidentView(Cause.PEER_FEED, (HOSTILE[1],), (hostile,), flaps=2)
    labels = {"target": HOSTILE[1], "group_version": HOSTILE[7], "severity": "critical"}
    view = group(alert(HOSTILE[3], labels), incident=incident)
    shown = (alert_group_message(view, NOW), member_details_reply(view, None, NOW), flapping_reply(view, 3))
    for msg in shown:
        mrkdwn = [b["text"] for b in msg.blocks if b.get("text", {}).get("type") == "mrkdwn"]
        texts = [msg.text, *(t["text"] for t in mrkdwn)]
        assert all("<" not in t and ">" not in t for t in texts), texts
        assert all("\n*Next step:* forged" not in t and "```" not in t for t in texts), texts
        # Inside a code span a mention is shown as text; outside one it must not be a mention.
        outside = [re.sub(r"`[^`]*`", "", t) for t in texts]
        assert all(not re.search(r"[@#](here|general)", t) for t in outside), texts
        assert "\u202e" not in text_of(msg)


def test_the_most_severe_firing_alert_leads_the_headline_and_the_first_is_also_firing() -> None:
    # The tour's target-down: TargetUnavailable (warning) opened the incident, NoHealthyPeers (critical,
    # "the paging rule") joined it. What pages leads; the alert that opened it is listed below.
    labels = {"target": T, "group_version": GV, "pod": "vc-0", "severity": "warning"}
    opened = alert("ResourceProxyTargetUnavailable", labels, snap=snapshot())
    paging = line("ResourceProxyNoHealthyPeers", severity=Severity.CRITICAL)
    incident = IncidentView(Cause.ENDPOINTS, ("ResourceProxyTargetUnavailable", paging.names[0]), (paging,))
    msg = alert_group_message(group(opened, incident=incident), NOW)
    head = msg.blocks[0]["text"]["text"]
    assert head == f"🔴 FIRING: ResourceProxyNoHealthyPeers · {T}"
    text = text_of(msg)
    assert "↳ also firing: 🟠 *ResourceProxyTargetUnavailable*" in text
    assert "↳ also firing: 🔴 *ResourceProxyNoHealthyPeers*" not in text
    assert "*2 alert rules, one cause:*" in text
    # A member no more severe than the message's own alert leaves the headline to it.
    calm = IncidentView(Cause.ENDPOINTS, ("A", PEER_CHURN), (line(PEER_CHURN),))
    own = alert_group_message(group(opened, incident=calm), NOW).blocks[0]["text"]["text"]
    assert own == f"🟠 FIRING: ResourceProxyTargetUnavailable · {T}"


def test_the_message_counts_every_firing_alert_of_the_incident_once() -> None:
    """The headline's count is the incident's firing alerts (its own and each member's); the cause line
    counts alert rules, so no two lines give one thing two numbers."""
    two = line(alerts=2)  # one member group of two alerts (two group/versions)
    done = line(PEER_CHURN, firing=False, resolved_at=NOW - timedelta(minutes=1))
    incident = IncidentView(Cause.ENDPOINTS, ("A", DISCOVERY_DEGRADED, PEER_CHURN), (two, done))
    text = text_of(alert_group_message(group(alert(snap=snapshot()), incident=incident), NOW))
    assert "· 3 alerts firing" in text  # 1 of its own, 2 of the member still firing
    assert "*3 alert rules, one cause:*" in text
