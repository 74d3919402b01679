"""The resolution summary's words: the source of its counts, resets, never acknowledged, escaping."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from bot.domain.acknowledgement import Acknowledgement
from bot.domain.impact import Impact, ImpactSource
from bot.domain.resolution import EventKind, OncallEvent, Resolution, SilenceNote
from bot.render.blocks import Message, context, message, section
from bot.render.resolution import SUMMARY_BLOCK_ID, summary_line, summary_reply, with_summary_line

START = datetime(2023, 11, 14, 22, 0, tzinfo=UTC)


def resolution(**kw: object) -> Resolution:
    base: dict[str, object] = {
        "channel": "#alpha-alerts",
        "group_key": "g",
        "targets": ("team-a/db",),
        "started_at": START,
        "resolved_at": START + timedelta(minutes=12),
        "ack": None,
        "silences": (),
        "escalations": (),
        "checks": (),
        "impact": Impact(
            ImpactSource.READINGS, {("503", "no_peer"): 7.0, ("404", "ownership_masked"): 3.0}, 2, 1, 1, 3
        ),
    }
    return Resolution(**(base | kw))  # type: ignore[arg-type]


def text(m: Message) -> str:
    return json.dumps(m.blocks, ensure_ascii=False) + m.text


def test_never_acknowledged_and_the_bots_own_readings_with_a_reset() -> None:
    reply = text(summary_reply(resolution(), START))
    assert "never acknowledged" in reply
    assert "10 failed requests by status and reason" in reply
    assert "`503` `no_peer`: 7" in reply
    assert "`404` `ownership_masked`: 3" in reply
    assert "proxybot's own readings" in reply
    assert "1 counter reset(s) found: a counter that went down counted from zero" in reply
    assert "Peak quarantined peers: 2; peak unsynced peer caches: 1." in reply


def test_prometheus_as_the_source_is_said_so() -> None:
    impact = Impact(ImpactSource.PROMETHEUS, {("503", "all_quarantined"): 40.0}, 2, 0)
    reply = text(summary_reply(resolution(impact=impact), START))
    assert (
        "Counted by Prometheus: `increase()` over the firing window (counter resets taken into account)"
        in reply
    )
    assert "own readings" not in reply


def test_a_prometheus_that_failed_is_named_with_the_fallback() -> None:
    impact = Impact(ImpactSource.READINGS, {}, 0, 0, 0, 2, fallback="Prometheus at http://p timed out")
    reply = text(summary_reply(resolution(impact=impact), START))
    assert "no failed requests" in reply
    assert "no counter reset found" in reply
    assert "Prometheus was not used: Prometheus at http://p timed out" in reply


def test_who_acknowledged_silences_escalations_and_checks() -> None:
    ack = Acknowledgement(
        "#alpha-alerts", "g", START.timestamp(), "U0ALICE", "alice", START.timestamp() + 120
    )
    silence = SilenceNote("bob (U0BOB)", "<!channel> db *maintenance*", START, START + timedelta(hours=1))
    escalation = OncallEvent(
        "e", "#a", "g", 0.0, EventKind.ESCALATED, START.timestamp() + 600, "<!subteam^S1>", ""
    )
    probe = OncallEvent(
        "p", "#a", "g", 0.0, EventKind.PROBE, START.timestamp() + 60, "bob", "Probe team-a/db: failed — 503"
    )
    r = resolution(ack=ack, silences=(silence,), escalations=(escalation,), checks=(probe,))
    reply = text(summary_reply(r, START))
    assert "acknowledged by alice 2 min after it fired" in reply
    assert "<@" not in reply, "people are named, not mentioned: the reply would notify them"
    assert "&lt;!channel&gt;" in reply
    assert "<!channel>" not in reply
    assert "&lt;!subteam^S1&gt;" in reply  # the escalation's mention is named, not sent again
    assert "Probe now by bob at 22:01 UTC: Probe team-a/db: failed — 503" in reply
    line = summary_line(r)
    assert line.startswith("🧾 Fired 12 min, acknowledged by alice")
    assert "escalated 1 time(s)" in line
    assert "silenced 1 time(s)" in line


def test_the_resolved_message_gets_one_line_however_often_it_is_laid_over() -> None:
    content = message("RESOLVED", [section("body")], [context(["updated"])])
    once = with_summary_line(content, resolution())
    twice = with_summary_line(once, resolution())
    assert once == twice
    assert [b.get("block_id") for b in twice.blocks].count(SUMMARY_BLOCK_ID) == 1
