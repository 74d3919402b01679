"""Storm summaries and their table of targets rendered for Slack, checked against the fake Slack."""

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

from bot.domain.alerts_catalog import (
    ALERTS,
    DISCOVERY_DEGRADED,
    NO_HEALTHY_PEERS,
    PEER_CACHE_UNSYNCED,
    PROBE_FAILING,
)
from bot.domain.findings import Severity
from bot.domain.messages import ActionRef
from bot.domain.storm import (
    StormCounts,
    StormEntry,
    StormView,
    TargetLive,
    TargetsRead,
    TargetState,
    storm_rows,
)
from bot.render.blocks import Message
from bot.render.slack import ACTION_ACK, ACTIONS_BLOCK_ID
from bot.render.storm import COLUMNS, storm_message, storm_table, storm_table_reply
from tests.fakes.alert_views import HOSTILE, NOW
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_limits import limit_problems

START = NOW - timedelta(minutes=2)
QUARANTINED = TargetLive(TargetState.NO_HEALTHY_QUARANTINED, True, 4.9, 0, 2, 0)
UNSYNCED = TargetLive(TargetState.CACHE_UNSYNCED, False, None, 2, 0, 0)


def mrkdwn_texts(msg: Message) -> list[str]:
    found = [msg.text]
    for block in msg.blocks:
        for obj in [block.get("text"), *block.get("fields", []), *block.get("elements", [])]:
            if isinstance(obj, dict) and obj.get("type") == "mrkdwn":
                found.append(obj["text"])
    return found


def all_text(msg: Message) -> str:
    return json.dumps(msg.as_kwargs(), ensure_ascii=False)


def entries(n: int, clusters: int = 1, alert: str = PEER_CACHE_UNSYNCED) -> list[StormEntry]:
    since = START.timestamp()
    bad = Severity.CRITICAL if alert == NO_HEALTHY_PEERS else Severity.WARNING
    return [StormEntry(alert, bad, f"g{i}", f"p/t{i:03}", f"c{i % clusters}", since=since) for i in range(n)]


def view(found: list[StormEntry], reads: dict[str, TargetsRead], ended: bool = False) -> StormView:
    rows = storm_rows(found, reads)
    return StormView.of(StormCounts(found), START, NOW - timedelta(minutes=1) if ended else None, rows)


def test_the_summary_groups_targets_by_state_per_cluster_and_names_the_cause_with_its_evidence() -> None:
    found = entries(500)
    lives = {f"p/t{i:03}": UNSYNCED for i in range(480)}
    msg = storm_message(view(found, {"c0": TargetsRead(lives)}), NOW)
    text = all_text(msg)
    assert msg.blocks[0]["text"]["text"] == "🌩️ Alert storm: 500 targets, 500 alerts"
    assert "*500 alerts in 500 groups on 500 targets across 1 cluster*" in text
    assert (
        "`c0` · 500 targets: 480 peer cache unsynced (peers from a stale list) · 20 no series on the proxy"
        in text
    )
    assert (
        "*Common cause:* `c0`'s peer feed: `peer_cache_synced` is 0 on every one of the 480 failing "
        "targets read behind it (20 more with no series or not read: not counted)" in text
    )
    assert f"🟠 *{PEER_CACHE_UNSYNCED}*: 500 alerts on 500 targets" in text
    assert "Every target with its state now: the table in this thread" in text
    assert limit_problems(msg.as_kwargs()) == []


HUNG = TargetLive(TargetState.NO_HEALTHY_HALF_OPEN, False, 4.73, 0, 0, 1)


def test_a_peer_feed_cause_names_the_targets_also_down_on_their_own() -> None:
    found = entries(31)
    lives = {f"p/t{i:03}": UNSYNCED for i in range(2, 31)} | {"p/t000": HUNG, "p/t001": HUNG}
    text = all_text(storm_message(view(found, {"c0": TargetsRead(lives)}), NOW))
    assert "*Common cause:* `c0`'s peer feed: `peer_cache_synced` is 0 on every one of the 31" in text
    assert "no fix on a target helps" not in text
    assert (
        "Besides, 2 targets are also down on their own (`p/t000`, `p/t001`: no listed peer answers): "
        "restoring the peer feed will not heal them; start with their control plane pods." in text
    )
    # Without a target down on its own, nothing on a target helps.
    calm = {f"p/t{i:03}": UNSYNCED for i in range(31)}
    text = all_text(storm_message(view(found, {"c0": TargetsRead(calm)}), NOW))
    assert "from the platform, so no fix on a target helps." in text
    assert "also down on" not in text


def test_a_platform_wide_peer_feed_cause_names_a_target_down_on_its_own() -> None:
    found = entries(6, clusters=2)
    lives = {f"p/t{i:03}": UNSYNCED for i in range(1, 6)} | {"p/t000": HUNG}
    reads = {"c0": TargetsRead(lives), "c1": TargetsRead(lives)}
    text = all_text(storm_message(view(found, reads), NOW))
    assert "*Common cause:* the platform, which every client shares: `peer_cache_synced` is 0" in text
    assert (
        "Besides, 1 target is also down on its own (`p/t000`: no listed peer answers): restoring the" in text
    )
    assert "will not heal it; start with its control plane pods." in text


def test_many_targets_down_on_their_own_are_named_up_to_a_cap() -> None:
    found = entries(10)
    lives = {f"p/t{i:03}": HUNG for i in range(7)} | {f"p/t{i:03}": UNSYNCED for i in range(7, 10)}
    text = all_text(storm_message(view(found, {"c0": TargetsRead(lives)}), NOW))
    assert (
        "7 targets are also down on their own (`p/t000`, `p/t001`, `p/t002`, `p/t003`, `p/t004` and 2 more"
        in text
    )


def test_without_live_rows_the_cause_is_only_suspected_from_the_shape() -> None:
    mixed = [*entries(600, clusters=3), *entries(400, clusters=3, alert=NO_HEALTHY_PEERS)]
    msg = storm_message(StormView(tuple(mixed), START), NOW)
    text = all_text(msg)
    assert "*Likely common cause:* many targets of several client clusters" in text
    assert "Now, per client cluster" not in text
    by_alert = msg.blocks[2]["text"]["text"].split("\n")
    assert by_alert[1].startswith(f"🔴 *{NO_HEALTHY_PEERS}*")  # worst first


def test_many_clusters_are_listed_up_to_a_cap() -> None:
    found = entries(40, clusters=20)
    msg = storm_message(view(found, {}), NOW)
    assert "… +12 more clusters: see the table" in all_text(msg)
    assert limit_problems(msg.as_kwargs()) == []


def test_a_storm_over_and_a_storm_resolved_say_how_long() -> None:
    found = entries(10)
    over = storm_message(view(found, {"c0": TargetsRead({})}, ended=True), NOW)
    assert over.blocks[0]["text"]["text"].startswith("🌤️ Alert storm over")
    assert "*Lasted:* 1 min" in all_text(over)
    assert "10 alerts still firing" in all_text(over)
    done = [
        StormEntry(e.alertname, e.severity, e.group_key, e.target, e.cluster, e.since, 1.0) for e in found
    ]
    resolved = storm_message(view(done, {"c0": TargetsRead({})}, ended=True), NOW)
    assert resolved.blocks[0]["text"]["text"].startswith("✅ Alert storm resolved")
    assert "*Resolved after 1 min*" in all_text(resolved)
    assert "10 resolved" in all_text(resolved)


def test_the_table_has_one_aligned_row_per_target_worst_first_with_the_numbers_behind_each_state() -> None:
    found = [*entries(3), StormEntry(DISCOVERY_DEGRADED, Severity.WARNING, "g0", "p/t000", "c0")]
    lives = {"p/t000": UNSYNCED, "p/t001": QUARANTINED}
    table = storm_table(view(found, {"c0": TargetsRead(lives)}), NOW, "#alerts")
    lines = table.content.decode().splitlines()
    assert lines[0].startswith("Alert storm in #alerts since ")
    assert lines[2].split("  ")[0] == COLUMNS[0]
    rows = lines[3:]
    assert [r.split()[1] for r in rows] == ["p/t001", "p/t000", "p/t002"]
    assert (
        "no healthy peers, all quarantined: healthy 0, quarantined 2, half_open 0; dial p99 4.90 s" in rows[0]
    )
    assert f"{DISCOVERY_DEGRADED}, {PEER_CACHE_UNSYNCED}" in rows[1]  # worst first, then by name
    assert "no series on the proxy" in rows[2]
    since = lines[2].index("SINCE")
    assert {r[since:] for r in rows} == {START.strftime("%Y-%m-%d %H:%M:%S")}
    assert table.filename == "storm-targets.txt"


def table_rows(msg: Message) -> list[list[str]]:
    """The cells of the reply's table block, as Slack shows them."""
    [table] = [b for b in msg.blocks if b["type"] == "table"]
    return [[cell_words(c) for c in row] for row in table["rows"]]


def cell_words(cell: dict[str, Any]) -> str:
    if cell["type"] == "raw_text":
        return str(cell["text"])
    return "".join(e["text"] for section in cell["elements"] for e in section["elements"])


def test_the_table_reply_is_one_table_block_a_header_then_a_row_per_target_worst_first() -> None:
    found = [*entries(3), StormEntry(DISCOVERY_DEGRADED, Severity.WARNING, "g0", "p/t000", "c0")]
    lives = {"p/t000": UNSYNCED, "p/t001": QUARANTINED}
    msg = storm_table_reply(view(found, {"c0": TargetsRead(lives)}), NOW)
    [table] = [b for b in msg.blocks if b["type"] == "table"]
    header, *rows = table_rows(msg)
    assert header == list(COLUMNS)
    assert all(c["type"] == "rich_text" for c in table["rows"][0])  # bold, as a header reads
    assert all(c["type"] == "raw_text" for row in table["rows"][1:] for c in row)
    assert [r[1] for r in rows] == ["p/t001", "p/t000", "p/t002"]
    assert (
        rows[0][3]
        == "no healthy peers, all quarantined: healthy 0, quarantined 2, half_open 0; dial p99 4.90 s"
    )
    assert rows[1][2] == f"{DISCOVERY_DEGRADED}, {PEER_CACHE_UNSYNCED}"
    assert {r[4] for r in rows} == {START.strftime("%Y-%m-%d %H:%M:%S")}
    # The long columns wrap on a narrow screen instead of being cut.
    assert [c.get("is_wrapped") for c in table["column_settings"]] == [False, False, True, True, False]
    assert msg.text.startswith("Every target of the storm, state at ")
    assert limit_problems(msg.as_kwargs()) == []


def test_a_table_cell_is_never_empty_and_never_longer_than_slack_takes() -> None:
    found = [StormEntry("A" * 5000, Severity.WARNING, "g", "p/t", "c0")]
    rows = table_rows(storm_table_reply(view(found, {"c0": TargetsRead({})}), NOW))
    assert rows[1][4] == "-"  # no start known
    assert len(rows[1][2]) <= 2000
    assert "truncated" in rows[1][2]


def test_a_cluster_not_read_says_why_in_every_row() -> None:
    table = storm_table(view(entries(2), {"c0": TargetsRead(None, "timed out after 5 s")}), NOW, "#a")
    rows = table.content.decode().splitlines()[3:]
    assert all("live state not read: timed out after 5 s" in r for r in rows)


def hostile_storm() -> StormView:
    found = [
        StormEntry(name, Severity.CRITICAL, "g", target, HOSTILE[2])
        for name, target in ((NO_HEALTHY_PEERS, HOSTILE[0]), (HOSTILE[1], HOSTILE[3]))
    ]
    return view(found, {HOSTILE[2]: TargetsRead({HOSTILE[0]: QUARANTINED})})


def test_hostile_names_are_inert_in_the_summary_and_cannot_forge_a_row_of_the_table() -> None:
    storm = hostile_storm()
    msg = storm_message(storm, NOW)
    texts = mrkdwn_texts(msg)
    assert all("<" not in t and ">" not in t for t in texts), texts
    assert all(not re.search(r"&(?!amp;|lt;|gt;)", t) for t in texts), texts
    assert all("\n*Next step:* forged" not in t and "```" not in t for t in texts), texts
    assert all(not re.search(r"[@#](here|general)", t) for t in texts), texts
    assert "\u202e" not in all_text(msg)
    table = storm_table(storm, NOW, "#a\n#b").content.decode()
    assert len(table.splitlines()) == 3 + 2  # title, blank, header, one row per place
    assert "\u202e" not in table
    reply = storm_table_reply(storm, NOW)
    assert len(table_rows(reply)) == 1 + 2
    assert all("\n" not in c and "\u202e" not in c for row in table_rows(reply) for c in row)


@pytest.fixture(scope="module")
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(channels=["C1"]) as fake:
        yield fake


_text = st.text(max_size=24)
_huge = st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=12), st.integers(1, 2500))
_value = st.one_of(_text, _huge, st.sampled_from(HOSTILE))
_names = st.one_of(st.sampled_from(sorted(ALERTS)), _value)
_storm_entries = st.builds(StormEntry, _names, st.sampled_from(Severity), _text, _value, _value)
_lives = st.builds(TargetLive, st.sampled_from(TargetState), st.sampled_from([None, True, False]))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(entries=st.lists(_storm_entries, max_size=50), times=st.integers(1, 60), lives=st.lists(_lives))
def test_any_storm_is_accepted_by_slack(
    slack: FakeSlack, entries: list[StormEntry], times: int, lives: list[TargetLive]
) -> None:
    web = WebClient(token=slack.bot_token, base_url=slack.api_url, timeout=10)
    reads = {
        e.cluster or "": TargetsRead({e.target or "": live}) for e, live in zip(entries, lives, strict=False)
    }
    storm = view(entries * times, reads)
    msg = storm_message(storm, NOW)
    assert limit_problems(msg.as_kwargs()) == []
    assert web.chat_postMessage(channel="C1", **msg.as_kwargs())["ok"]
    table = storm_table(storm, NOW, "C1")
    assert len(table.content.decode().splitlines()) == 3 + len(storm.rows)
    if 0 < len(storm.rows) <= 99:
        reply = storm_table_reply(storm, NOW)
        assert web.chat_postMessage(channel="C1", **reply.as_kwargs())["ok"]


def test_a_storm_lasting_has_an_acknowledge_button_and_one_over_has_none() -> None:
    found = entries(3)
    ref = ActionRef.for_group(None, None, "storm:#alerts:1").encode()
    lasting = storm_message(view(found, {}), NOW, ack=ref)
    [block] = [b for b in lasting.blocks if b.get("block_id") == ACTIONS_BLOCK_ID]
    assert [(e["action_id"], e.get("value")) for e in block["elements"]] == [(ACTION_ACK, ref)]
    over = storm_message(view(found, {}, ended=True), NOW, ack=ref)
    assert all(b.get("block_id") != ACTIONS_BLOCK_ID for b in over.blocks)
    assert storm_message(view(found, {}), NOW).blocks == lasting.blocks[:-1]


def test_an_alert_naming_no_target_is_said_apart_from_the_targets_counted() -> None:
    found = [
        *entries(3),
        StormEntry(PROBE_FAILING, Severity.WARNING, "gp", None, "c0", since=START.timestamp()),
    ]
    lives = {f"p/t{i:03}": UNSYNCED for i in range(3)}
    text = all_text(storm_message(view(found, {"c0": TargetsRead(lives)}), NOW))
    assert (
        "`c0` · 3 targets: 3 peer cache unsynced (peers from a stale list); and 1 alert naming no target"
        in text
    )
    assert "without a target label" not in text
