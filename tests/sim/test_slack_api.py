"""The fake Slack server answers like Slack for the calls slack_sdk makes, and refuses what Slack refuses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from sim.slack_workspace import MANIFEST_SCOPES
from tests.fakes.slack_api import FakeSlack, iter_texts

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(channels={"C1": "#alerts"}) as fake:
        yield fake


def client(slack: FakeSlack, token: str = "xoxb-test-token") -> AsyncWebClient:
    return AsyncWebClient(token=token, base_url=slack.api_url, timeout=5)


async def refused(call: Any) -> dict[str, Any]:
    with pytest.raises(SlackApiError) as err:
        await call
    return dict(err.value.response.data)


async def test_post_update_and_thread(slack: FakeSlack) -> None:
    web = client(slack)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "peers: 0 healthy"}}]
    posted = await web.chat_postMessage(channel="C1", text="firing", blocks=blocks)
    await web.chat_update(channel="C1", ts=posted["ts"], text="resolved", blocks=blocks)
    await web.chat_postMessage(channel="C1", text="resolved after 3 min", thread_ts=posted["ts"])
    [top] = slack.top_level("C1")
    assert (top.text, len(top.versions)) == ("resolved", 1)
    assert [m.text for m in slack.thread("C1", posted["ts"])] == ["resolved after 3 min"]
    assert list(iter_texts(top.blocks)) == ["peers: 0 healthy"]


async def test_a_post_by_name_answers_with_the_channel_id(slack: FakeSlack) -> None:
    web = client(slack)
    posted = await web.chat_postMessage(channel="#alerts", text="firing")
    assert posted["channel"] == "C1"
    also = await web.chat_postMessage(channel="alerts", text="bare names work too")
    assert also["channel"] == "C1"
    assert [m.text for m in slack.top_level("#alerts")] == ["firing", "bare names work too"]


@pytest.mark.parametrize("method", ["chat_update", "chat_delete"])
async def test_edits_by_channel_name_are_channel_not_found(slack: FakeSlack, method: str) -> None:
    web = client(slack)
    posted = await web.chat_postMessage(channel="#alerts", text="firing")
    call = getattr(web, method)
    kwargs: dict[str, Any] = {"text": "resolved"} if method == "chat_update" else {}
    answer = await refused(call(channel="#alerts", ts=posted["ts"], **kwargs))
    assert answer["error"] == "channel_not_found"
    await call(channel="C1", ts=posted["ts"], **kwargs)


async def test_permalink_and_info_take_ids_only(slack: FakeSlack) -> None:
    web = client(slack)
    posted = await web.chat_postMessage(channel="#alerts", text="firing")
    link = await web.chat_getPermalink(channel="C1", message_ts=posted["ts"])
    assert "C1" in link["permalink"]
    assert (await refused(web.chat_getPermalink(channel="#alerts", message_ts=posted["ts"])))[
        "error"
    ] == "channel_not_found"


async def test_unknown_channel_and_not_a_member(slack: FakeSlack) -> None:
    web = client(slack)
    slack.add_channel("#elsewhere", member=False)
    assert (await refused(web.chat_postMessage(channel="#nowhere", text="x")))["error"] == "channel_not_found"
    assert (await refused(web.chat_postMessage(channel="#elsewhere", text="x")))["error"] == "not_in_channel"
    assert slack.top_level() == []


async def test_a_reply_to_a_message_that_does_not_exist_is_refused(slack: FakeSlack) -> None:
    answer = await refused(client(slack).chat_postMessage(channel="C1", text="x", thread_ts="1.000100"))
    assert answer["error"] == "thread_not_found"


async def test_a_reply_may_be_broadcast_to_the_channel_but_a_top_level_post_may_not(slack: FakeSlack) -> None:
    web = client(slack)
    posted = await web.chat_postMessage(channel="C1", text="firing")
    await web.chat_postMessage(channel="C1", text="paged", thread_ts=posted["ts"], reply_broadcast=True)
    await web.chat_postMessage(channel="C1", text="quiet", thread_ts=posted["ts"])
    assert [(m.text, m.broadcast) for m in slack.thread("C1", posted["ts"])] == [
        ("paged", True),
        ("quiet", False),
    ]
    answer = await refused(web.chat_postMessage(channel="C1", text="x", reply_broadcast=True))
    assert answer["error"] == "invalid_arguments"
    answer = await refused(
        web.chat_postMessage(channel="C1", text="x", thread_ts=posted["ts"], reply_broadcast="loud")
    )
    assert answer["error"] == "invalid_arguments"
    assert [m.text for m in slack.top_level("C1")] == ["firing"]
    history = await web.conversations_replies(channel="C1", ts=posted["ts"])
    assert [m.get("subtype") for m in history["messages"]] == [None, "thread_broadcast", None]


async def test_rejects_bad_token(slack: FakeSlack) -> None:
    answer = await refused(client(slack, "xoxb-wrong").chat_postMessage(channel="C1", text="x"))
    assert answer["error"] == "invalid_auth"


def _section(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}, **extra}


def _button(text: str, value: str = "v", action_id: str = "a") -> dict[str, Any]:
    return {
        "type": "button",
        "text": {"type": "plain_text", "text": text},
        "value": value,
        "action_id": action_id,
    }


@pytest.mark.parametrize(
    ("blocks", "pointer"),
    [
        ([{"type": "divider"}] * 51, "/blocks"),
        ([{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}], "/blocks/0/text/text"),
        ([{"type": "header", "text": {"type": "mrkdwn", "text": "h"}}], "/blocks/0/text/type"),
        ([_section("ok"), _section("s" * 3001)], "/blocks/1/text/text"),
        ([_section("")], "/blocks/0/text/text"),
        ([{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}], "/blocks/0/fields"),
        (
            [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * 2001}]}],
            "/blocks/0/fields/0/text",
        ),
        ([{"type": "context", "elements": [{"type": "mrkdwn", "text": "c"}] * 11}], "/blocks/0/elements"),
        (
            [{"type": "actions", "elements": [_button("b", action_id=f"a{i}") for i in range(26)]}],
            "/blocks/0/elements",
        ),
        ([{"type": "actions", "elements": [_button("b" * 76)]}], "/blocks/0/elements/0/text/text"),
        ([{"type": "actions", "elements": [_button("b", "v" * 2001)]}], "/blocks/0/elements/0/value"),
        ([{"type": "actions", "elements": [_button("b"), _button("c")]}], "/blocks/0/elements/1/action_id"),
        ([_section("a", block_id="x"), _section("b", block_id="x")], "/blocks/1/block_id"),
        ([{"type": "fancy"}], "/blocks/0/type"),
    ],
)
async def test_enforces_block_kit_limits(
    slack: FakeSlack, blocks: list[dict[str, Any]], pointer: str
) -> None:
    answer = await refused(client(slack).chat_postMessage(channel="C1", text="x", blocks=blocks))
    assert answer["error"] == "invalid_blocks"
    [message] = answer["response_metadata"]["messages"]
    assert message.startswith("[ERROR] ")
    assert message.endswith(f"[json-pointer:{pointer}]")
    assert slack.top_level() == []


def _table(rows: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "table", "rows": rows, **extra}


def _raw(text: str) -> dict[str, Any]:
    return {"type": "raw_text", "text": text}


def _rich(text: str) -> dict[str, Any]:
    words = {"type": "text", "text": text, "style": {"bold": True}}
    return {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [words]}]}


@pytest.mark.parametrize(
    ("table", "pointer"),
    [
        (_table([[_raw("r")]] * 101), "/blocks/0/rows"),
        (_table([[_raw("c")] * 21]), "/blocks/0/rows/0"),
        (_table([]), "/blocks/0/rows"),
        (_table([[]]), "/blocks/0/rows/0"),
        (_table([[_raw("a"), _raw("")]]), "/blocks/0/rows/0/1/text"),
        (_table([[_raw("a")], [_raw("t" * 2001)]]), "/blocks/1/rows/1/0/text"),
        (_table([[{"type": "mrkdwn", "text": "*a*"}]]), "/blocks/0/rows/0/0"),
        (_table([[{"type": "rich_text", "elements": []}]]), "/blocks/0/rows/0/0/elements"),
        (_table([[_raw("a")]], column_settings=[{"align": "middle"}]), "/blocks/0/column_settings/0/align"),
        (_table([[_raw("a")]], column_settings=[{}] * 21), "/blocks/0/column_settings"),
        (
            _table([[_raw("a")]], column_settings=[{"is_wrapped": "yes"}]),
            "/blocks/0/column_settings/0/is_wrapped",
        ),
    ],
)
async def test_a_table_block_over_slack_s_limits_is_refused(
    slack: FakeSlack, table: dict[str, Any], pointer: str
) -> None:
    blocks = [_section("before"), table] if pointer.startswith("/blocks/1") else [table]
    answer = await refused(client(slack).chat_postMessage(channel="C1", text="x", blocks=blocks))
    assert answer["error"] == "invalid_blocks"
    [message] = answer["response_metadata"]["messages"]
    assert message.endswith(f"[json-pointer:{pointer}]")
    assert slack.top_level() == []


async def test_a_table_block_within_the_limits_is_taken_and_a_second_table_is_refused(
    slack: FakeSlack,
) -> None:
    rows = [[_rich("CLUSTER"), *(_rich(f"h{i}") for i in range(19))]]
    rows += [[_raw("c" * 2000), *(_raw(f"v{i}") for i in range(19))]] * 99
    settings = [{"align": "left", "is_wrapped": True}] * 20
    table = _table(rows, column_settings=settings)
    web = client(slack)
    posted = await web.chat_postMessage(channel="C1", text="x", blocks=[_section("every target"), table])
    assert posted["ok"]
    assert slack.top_level()[0].blocks[1] == table
    assert {"CLUSTER", "v0", "c" * 2000} <= set(iter_texts(slack.top_level()[0].blocks))  # every cell
    answer = await refused(web.chat_postMessage(channel="C1", text="x", blocks=[table, table]))
    assert answer["error"] == "invalid_attachments"
    assert answer["response_metadata"]["messages"] == ["[ERROR] only_one_table_allowed"]
    edit = web.chat_update(channel="C1", ts=posted["ts"], text="x", blocks=[table, table])
    assert (await refused(edit))["error"] == "invalid_attachments"
    assert len(slack.top_level()) == 1


async def test_limits_apply_to_edits_too(slack: FakeSlack) -> None:
    web = client(slack)
    posted = await web.chat_postMessage(channel="C1", text="fine")
    answer = await refused(web.chat_update(channel="C1", ts=posted["ts"], text="x", blocks=[_section("")]))
    assert answer["error"] == "invalid_blocks"
    assert slack.top_level()[0].text == "fine"


async def test_text_over_40000_is_msg_too_long_and_empty_is_no_text(slack: FakeSlack) -> None:
    web = client(slack)
    assert (await refused(web.chat_postMessage(channel="C1", text="x" * 40_001)))["error"] == "msg_too_long"
    answer = await refused(web.api_call("chat.postMessage", json={"channel": "C1", "text": ""}))
    assert answer["error"] == "no_text"


async def test_injected_429_carries_retry_after(slack: FakeSlack) -> None:
    slack.fail("chat.postMessage", status=429, retry_after=7)
    with pytest.raises(SlackApiError) as err:
        await client(slack).chat_postMessage(channel="C1", text="x")
    assert err.value.response.status_code == 429
    # aiohttp's multidict: one header value.
    assert err.value.response.headers["Retry-After"] == "7"
    posted = await client(slack).chat_postMessage(channel="C1", text="x")
    assert posted["ok"]


async def test_the_posting_limit_answers_429_per_channel(slack: FakeSlack) -> None:
    now = [100.0]
    slack.clock = lambda: now[0]
    slack.add_channel("#other")
    slack.limit_posts(per_second=1.0, burst=2)
    web = client(slack)
    await web.chat_postMessage(channel="C1", text="1")
    await web.chat_postMessage(channel="C1", text="2")
    with pytest.raises(SlackApiError) as err:
        await web.chat_postMessage(channel="C1", text="3")
    assert (err.value.response.status_code, err.value.response.headers["Retry-After"]) == (429, "1")
    await web.chat_postMessage(channel="#other", text="another channel has its own pace")
    now[0] += 1.0
    await web.chat_postMessage(channel="C1", text="3")
    assert [m.text for m in slack.top_level("C1")] == ["1", "2", "3"]


async def test_files_upload_v2_lands_in_thread(slack: FakeSlack) -> None:
    web = client(slack)
    posted = await web.chat_postMessage(channel="C1", text="alert")
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 100
    await web.files_upload_v2(channel="C1", thread_ts=posted["ts"], content=png, filename="chart.png")
    [upload] = slack.uploads
    assert (upload["channel_id"], upload["thread_ts"], upload["content"]) == ("C1", posted["ts"], png)


async def test_files_upload_v2_by_channel_name_is_refused(slack: FakeSlack) -> None:
    web = client(slack)
    posted = await web.chat_postMessage(channel="C1", text="alert")
    call = web.files_upload_v2(channel="#alerts", thread_ts=posted["ts"], content=b"png", filename="c.png")
    assert (await refused(call))["error"] == "channel_not_found"
    assert slack.uploads == []


async def test_history_carries_metadata_and_needs_its_scope() -> None:
    with FakeSlack(channels=["#alerts"], scopes={"chat:write", "channels:history"}) as slack:
        web = client(slack)
        channel = slack.channel_id("#alerts")
        metadata = {"event_type": "proxybot_group", "event_payload": {"group": "g1"}}
        await web.chat_postMessage(channel="#alerts", text="first", metadata=metadata)
        await web.chat_postMessage(channel="#alerts", text="second")
        history = await web.conversations_history(channel=channel, include_all_metadata=True, limit=1)
        assert [m["text"] for m in history["messages"]] == ["second"]
        older = await web.conversations_history(
            channel=channel, include_all_metadata=True, cursor=history["response_metadata"]["next_cursor"]
        )
        assert older["messages"][0]["metadata"] == metadata
        assert (await refused(web.conversations_history(channel="#alerts")))["error"] == "channel_not_found"


async def test_methods_beyond_the_apps_scopes_are_missing_scope(slack: FakeSlack) -> None:
    answer = await refused(client(slack).conversations_info(channel="C1"))
    assert (answer["error"], answer["needed"]) == ("missing_scope", "channels:read")


async def test_an_app_installed_before_the_history_scopes_cannot_read_history() -> None:
    with FakeSlack(channels={"C1": "#alerts"}, scopes={"commands", "chat:write", "files:write"}) as slack:
        answer = await refused(client(slack).conversations_history(channel="C1", include_all_metadata=True))
        assert (answer["error"], answer["needed"]) == ("missing_scope", "channels:history")
        assert "channels:history" not in answer["provided"].split(",")


def test_the_fake_has_the_scopes_of_the_shipped_manifests() -> None:
    for name in ("manifest.yaml", "manifest.socket-mode.yaml"):
        manifest = yaml.safe_load((ROOT / "config" / "slack" / name).read_text())
        assert set(manifest["oauth_config"]["scopes"]["bot"]) == MANIFEST_SCOPES, name


def test_response_url_allows_five_uses(slack: FakeSlack) -> None:
    url = slack.response_url("abc")
    answers = [httpx.post(url, json={"text": f"answer {i}"}, timeout=5) for i in range(6)]
    assert [a.status_code for a in answers] == [200] * 5 + [404]
    assert answers[-1].json()["error"] == "used_url"
    assert [r["text"] for r in slack.responses] == [f"answer {i}" for i in range(5)]
    assert slack.refused_responses == [("abc", "used_url")]


def test_response_url_expires_after_30_minutes(slack: FakeSlack) -> None:
    now = [0.0]
    slack.clock = lambda: now[0]
    url = slack.response_url("late")
    now[0] += 30 * 60 + 1
    answer = httpx.post(url, json={"text": "too late"}, timeout=5)
    assert (answer.status_code, answer.json()["error"]) == (404, "expired_url")
    assert slack.responses == []


def test_response_url_refuses_over_limit_content(slack: FakeSlack) -> None:
    url = slack.response_url("big")
    answer = httpx.post(url, content=json.dumps({"text": "x" * 40_001}), timeout=5)
    assert (answer.status_code, answer.json()["error"]) == (400, "msg_too_long")
