"""The demo page over the fake Slack: mrkdwn and Block Kit as escaped HTML, and presses and commands sent to
the bot signed as Slack signs them (checked here by slack_sdk's own verifier, as bolt checks them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from slack_sdk.signature import SignatureVerifier

from sim.slack_api import FakeSlack
from sim.slack_mrkdwn import mrkdwn_html
from sim.slack_page import USER_ID, SlackPage
from sim.slack_page_blocks import blocks_html
from sim.slack_page_modal import REQUIRED, OpenModal, modal_html
from tests.fakes.http_server import LocalServer, Request

SECRET = "page-test-signing-secret-5b1e"
TOKEN = "xoxb-test-token"
# The only markup the page makes from a message.
TAGS = {"b", "i", "s", "code", "pre", "br", "a", "span", "ul", "ol", "li", "blockquote", "div", "hr", "img"}
TAGS |= {"button", "select", "option", "details", "summary", "time", "table", "tr", "td"}


class Markup(HTMLParser):
    """Every tag and attribute in a piece of HTML, and its text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    @property
    def shown(self) -> str:
        return "".join(self.text)


def assert_inert(html: str) -> Markup:
    """Only the page's own tags, no event handler, no link a browser would run."""
    markup = Markup(html)
    for tag, attrs in markup.tags:
        assert tag in TAGS, html
        assert not any(name.startswith("on") for name in attrs), html
        for name in ("href", "src"):
            value = attrs.get(name)
            assert value is None or value.startswith(("http://", "https://", "mailto:", "/page/")), html
    return markup


def test_mrkdwn_formatting_links_mentions_lists_and_code() -> None:
    text = (
        "*Now:* _still_ ~gone~ `peer_cache_synced` <https://example.com/a?b=1&amp;c=2|the graph> "
        "<@U0123ABCDE> <!subteam^S0123|@oncall> <#C0123|alerts>\n• one\n• two\n```kubectl get --raw /x```"
    )
    markup = assert_inert(mrkdwn_html(text))
    assert (
        "a",
        {"href": "https://example.com/a?b=1&c=2", "target": "_blank", "rel": "noopener noreferrer"},
    ) in (markup.tags)
    assert [t for t, _ in markup.tags].count("li") == 2
    for tag in ("b", "i", "s", "code", "pre", "ul"):
        assert tag in {t for t, _ in markup.tags}
    shown = markup.shown
    for mention in ("@U0123ABCDE", "@oncall", "#alerts"):
        assert mention in shown
    assert "kubectl get --raw /x" in shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("&lt;script&gt;alert(1)&lt;/script&gt;", "<script>alert(1)</script>"),  # escaped by the bot
        ("<script>alert(1)</script>", "script"),  # raw: a `<...>` construct, read as a link, not followed
        ('&lt;img src=x onerror="alert(1)"&gt;', '<img src=x onerror="alert(1)">'),
        ("<javascript:alert(1)|click me>", "click me"),
        ("<data:text/html,hi|data>", "data"),
        ("a &amp;lt; b", "a &lt; b"),  # one level of Slack escaping only
    ],
)
def test_outside_text_shows_as_text_never_markup(text: str, shown: str) -> None:
    markup = assert_inert(mrkdwn_html(text))
    assert shown in markup.shown
    assert all(tag != "a" for tag, _ in markup.tags)


@given(st.text(alphabet=st.sampled_from(list("<>&|*_~`\"' \n:/@!#^=ajvscript.x1")), max_size=60))
def test_no_text_makes_markup_of_its_own(text: str) -> None:
    assert_inert(mrkdwn_html(text))
    assert_inert(blocks_html([{"type": "section", "text": {"type": "mrkdwn", "text": text}}]))
    assert_inert(blocks_html([{"type": "header", "text": {"type": "plain_text", "text": text}}]))


def plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}


def test_blocks_are_drawn_and_controls_carry_what_is_pressed() -> None:
    menu = [{"text": plain("1h"), "value": "1h"}]
    blocks = [
        {"type": "header", "text": plain("🔴 FIRING <b>x</b>")},
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": "*peers*"},
            "fields": [{"type": "mrkdwn", "text": "a"}, plain("*b*")],
            "accessory": {"type": "overflow", "action_id": "more", "options": menu},
        },
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "read _now_"}]},
        {"type": "divider"},
        {
            "type": "actions",
            "block_id": "acts",
            "elements": [
                {"type": "button", "action_id": "proxy_probe", "value": "v", "text": plain("Probe now")},
                {"type": "button", "action_id": "link", "url": "javascript:alert(1)", "text": plain("bad")},
                {"type": "static_select", "action_id": "pick", "options": menu},
            ],
        },
        {"type": "image", "image_url": "https://example.com/c.png", "alt_text": "chart"},
        {"type": "video"},
    ]
    html = blocks_html(blocks)
    markup = assert_inert(html)
    buttons = [attrs for tag, attrs in markup.tags if tag == "button"]
    assert len(buttons) == 1
    assert json.loads(buttons[0]["data-action"] or "") == {
        "action_id": "proxy_probe",
        "block_id": "acts",
        "type": "button",
    }
    assert len([t for t, _ in markup.tags if t == "select"]) == 2
    assert "<b>x</b>" in markup.shown  # a plain_text header is text
    assert "*b*" in markup.shown  # and so is a plain_text field
    assert "[a video block the page does not draw]" in markup.shown
    assert ("img", {"class": "image", "src": "https://example.com/c.png", "alt": "chart"}) in markup.tags


def rich(text: str, *, bold: bool) -> dict[str, Any]:
    words: dict[str, Any] = {"type": "text", "text": text, **({"style": {"bold": True}} if bold else {})}
    return {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [words]}]}


def test_a_table_block_is_drawn_as_a_table_its_cells_as_text() -> None:
    table = {
        "type": "table",
        "column_settings": [{"align": "left"}, {"align": "right", "is_wrapped": True}],
        "rows": [
            [rich("TARGET", bold=True), rich("STATE <b>", bold=True), rich("x", bold=False)],
            [{"type": "raw_text", "text": "platform/shard-00"}, {"type": "raw_text", "text": "<i>down</i>"}],
        ],
    }
    html = blocks_html([table])
    markup = assert_inert(html)
    cells = [attrs.get("class") for tag, attrs in markup.tags if tag == "td"]
    assert cells == [
        "align-left unwrapped",
        "align-right wrapped",
        "align-left unwrapped",  # beyond the settings: Slack's default
        "align-left unwrapped",
        "align-right wrapped",
    ]
    assert [tag for tag, _ in markup.tags].count("tr") == 2
    assert [tag for tag, _ in markup.tags].count("b") == 2  # the bold header cells, not "x"
    assert "STATE <b>" in markup.shown  # outside text stays text
    assert "<i>down</i>" in markup.shown
    assert "platform/shard-00" in markup.shown
    assert "does not draw" not in markup.shown


# -- the page's server -------------------------------------------------------------------------------------


class Bot:
    """Stands in for the bot's /slack/events: verifies each request as bolt does, answers through the
    response_url when told to."""

    def __init__(self) -> None:
        self.verifier = SignatureVerifier(SECRET)
        self.received: list[dict[str, list[str]]] = []
        self.view_answer: Any = b""  # what a view_submission is answered (b"": the modal closes)

    def __call__(self, request: Request) -> tuple[int, Any]:
        body = request.body.decode()
        if not self.verifier.is_valid_request(body, dict(request.headers)):
            return 401, {"error": "invalid signature"}
        form = parse_qs(body)
        self.received.append(form)
        if "payload" in form and json.loads(form["payload"][0])["type"] == "view_submission":
            return 200, self.view_answer
        if "payload" in form:
            response_url = json.loads(form["payload"][0])["response_url"]
        else:
            response_url = form["response_url"][0]
        httpx.post(response_url, json={"text": "*probing* `platform/crd-store`"}, timeout=5)
        return 200, {}


@pytest.fixture
def page() -> Iterator[tuple[FakeSlack, SlackPage, Bot]]:
    slack = FakeSlack(bot_token=TOKEN, channels={"C1": "#alerts"})
    page = SlackPage(slack)
    bot = Bot()
    with slack, LocalServer(bot) as server:
        page.connect(f"{server.url}/slack/events", SECRET)
        yield slack, page, bot


def post_alert(slack: FakeSlack) -> str:
    blocks = [
        {"type": "section", "text": {"type": "mrkdwn", "text": "FIRING"}},
        {
            "type": "actions",
            "block_id": "acts",
            "elements": [
                {
                    "type": "button",
                    "action_id": "proxy_probe",
                    "value": "the-message-s-value",
                    "text": {"type": "plain_text", "text": "Probe now"},
                }
            ],
        },
    ]
    answer = httpx.post(
        slack.api_url + "chat.postMessage",
        headers={"Authorization": f"Bearer {TOKEN}"},
        json={"channel": "C1", "text": "FIRING", "blocks": blocks},
        timeout=5,
    ).json()
    return str(answer["ts"])


def test_a_press_is_a_signed_block_actions_with_the_message_s_own_value(page: Any) -> None:
    slack, served, bot = page
    ts = post_alert(slack)
    press = {"channel": "C1", "ts": ts, "block_id": "acts", "action_id": "proxy_probe", "value": "forged"}
    answer = httpx.post(served.url + "page/action", json=press, timeout=10)
    assert answer.json() == {"ok": True, "status": 200}
    [form] = bot.received
    payload = json.loads(form["payload"][0])
    assert payload["type"] == "block_actions"
    assert payload["user"]["id"] == USER_ID
    assert payload["channel"] == {"id": "C1", "name": "alerts"}
    assert payload["container"]["message_ts"] == ts
    assert payload["message"]["ts"] == ts
    assert payload["actions"][0]["action_id"] == "proxy_probe"
    assert payload["actions"][0]["value"] == "the-message-s-value"
    state = httpx.get(served.url + "page/state", params={"channel": "C1"}, timeout=5).json()
    assert "Only visible to you" in state["html"]
    assert "<b>probing</b> <code>platform/crd-store</code>" in state["html"]


def test_the_command_box_sends_a_signed_slash_command(page: Any) -> None:
    _, served, bot = page
    answer = httpx.post(served.url + "page/command", json={"channel": "C1", "text": " status "}, timeout=10)
    assert answer.json()["ok"] is True
    [form] = bot.received
    assert {k: v[0] for k, v in form.items() if k in ("command", "text", "channel_id", "user_id")} == {
        "command": "/proxy",
        "text": "status",
        "channel_id": "C1",
        "user_id": USER_ID,
    }


@pytest.mark.parametrize(
    ("path", "body", "status", "field"),
    [
        ("page/action", {"channel": "C1", "ts": "1.0", "block_id": "a", "action_id": "probe"}, 404, "ts"),
        ("page/action", {"channel": "C9", "ts": "1.0", "block_id": "", "action_id": "x"}, 404, "channel"),
        ("page/action", {"channel": "C1", "block_id": "acts", "action_id": "x"}, 400, "ts"),
        ("page/action", {"channel": "C1", "ts": "1.0", "block_id": 3, "action_id": "x"}, 400, "block_id"),
        ("page/command", {"channel": "C1"}, 400, "text"),
        ("page/command", {"channel": "C1", "text": "x" * 3000}, 400, "text"),
        ("page/command", [], 400, "body"),
    ],
)  # fmt: skip
def test_what_cannot_be_pressed_is_a_4xx_naming_the_field(
    page: Any, path: str, body: object, status: int, field: str
) -> None:
    _, served, bot = page
    answer = httpx.post(served.url + path, json=body, timeout=5)
    assert answer.status_code == status
    assert answer.json()["error"].startswith(f"{field}:")
    assert bot.received == []


def test_a_control_the_message_does_not_have_is_refused(page: Any) -> None:
    slack, served, bot = page
    ts = post_alert(slack)
    press = {"channel": "C1", "ts": ts, "block_id": "acts", "action_id": "proxy_silence"}
    answer = httpx.post(served.url + "page/action", json=press, timeout=5)
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("action_id:")
    assert bot.received == []


def test_the_signing_secret_never_reaches_the_browser(page: Any) -> None:
    slack, served, _ = page
    post_alert(slack)
    shown = [
        httpx.get(served.url, timeout=5).text,
        httpx.get(served.url + "page/state", params={"channel": "C1"}, timeout=5).text,
        httpx.get(served.url + "page/static/page.js", timeout=5).text,
    ]
    assert all(SECRET not in text for text in shown)
    assert "script-src 'self'" in httpx.get(served.url, timeout=5).headers["content-security-policy"]


PNG = b"\x89PNG\r\n\x1a\n.."


def upload(slack: FakeSlack, name: str, content: bytes, thread_ts: str) -> None:
    """files_upload_v2's three steps, into the thread of `thread_ts`."""
    web = {"Authorization": f"Bearer {TOKEN}"}
    url = slack.api_url + "files.getUploadURLExternal"
    got = httpx.post(url, headers=web, data={"filename": name, "length": len(content)}, timeout=5).json()
    httpx.post(got["upload_url"], content=content, timeout=5)
    files = json.dumps([{"id": got["file_id"], "title": name}])
    shared = {"files": files, "channel_id": "C1", "thread_ts": thread_ts}
    httpx.post(slack.api_url + "files.completeUploadExternal", headers=web, data=shared, timeout=5)


def test_files_are_shown_and_served(page: Any) -> None:
    slack, served, _ = page
    ts = post_alert(slack)
    for name, content in (("table.txt", b"CLUSTER  TARGET\nteam-a   <b>x</b>\n"), ("c.png", PNG)):
        upload(slack, name, content, ts)
    html = httpx.get(served.url, params={"channel": "C1"}, timeout=5).text
    assert '<span class="reply-count">2 replies</span>' in html
    assert "team-a   &lt;b&gt;x&lt;/b&gt;" in html
    [png] = [u for u in slack.shown_uploads() if u["filename"] == "c.png"]
    image = httpx.get(served.url + f"page/files/{png['id']}", timeout=5)
    assert image.headers["content-type"] == "image/png"
    assert f'src="/page/files/{png["id"]}"' in html


def test_without_a_bot_a_press_is_503(page: Any) -> None:
    slack, served, _ = page
    ts = post_alert(slack)
    served.events_url = None  # as before the demo's first bot is up
    press = {"channel": "C1", "ts": ts, "block_id": "acts", "action_id": "proxy_probe"}
    answer = httpx.post(served.url + "page/action", json=press, timeout=5)
    assert answer.status_code == 503
    assert answer.json()["error"].startswith("bot:")


@pytest.mark.parametrize(
    ("headers", "status", "field"),
    [
        ({"Content-Type": "text/plain"}, 415, "content-type"),
        ({"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, "origin"),
    ],
)
def test_only_the_page_itself_may_press(page: Any, headers: dict[str, str], status: int, field: str) -> None:
    slack, served, bot = page
    ts = post_alert(slack)
    press = json.dumps({"channel": "C1", "ts": ts, "block_id": "acts", "action_id": "proxy_probe"})
    answer = httpx.post(served.url + "page/action", content=press, headers=headers, timeout=5)
    assert answer.status_code == status
    assert answer.json()["error"].startswith(f"{field}:")
    assert bot.received == []
    same = {"Content-Type": "application/json", "Origin": served.url.rstrip("/")}
    assert httpx.post(served.url + "page/action", content=press, headers=same, timeout=10).json()["ok"]


def test_a_page_of_another_name_is_refused_even_with_a_matching_origin(page: Any) -> None:
    # DNS rebinding: evil.example resolves to 127.0.0.1; the browser sends its own name as Host and as
    # Origin, so the two match. Only the page's loopback name is served.
    slack, served, bot = page
    ts = post_alert(slack)
    port = served.url.rstrip("/").rsplit(":", 1)[1]
    press = json.dumps({"channel": "C1", "ts": ts, "block_id": "acts", "action_id": "proxy_probe"})
    rebound = {"Content-Type": "application/json", "Host": f"evil.example:{port}"}
    rebound["Origin"] = f"http://evil.example:{port}"
    answer = httpx.post(served.url + "page/action", content=press, headers=rebound, timeout=5)
    assert answer.status_code == 400
    assert httpx.get(served.url, headers={"Host": f"evil.example:{port}"}, timeout=5).status_code == 400
    assert bot.received == []


# -- modals -------------------------------------------------------------------------------------------------

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def modal_view(text: str = "Silence it") -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": "form",
        "title": plain(text[:24]),
        "submit": plain("Silence"),
        "close": plain("Cancel"),
        "private_metadata": "signed-by-the-bot",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": text.replace("<", "&lt;")}},
            {
                "type": "input",
                "block_id": "how_long",
                "label": plain(text),
                "element": {
                    "type": "static_select",
                    "action_id": "value",
                    "options": [
                        {"text": plain(text), "value": '1h"><b>'},
                        {"text": plain("4h"), "value": "4h"},
                    ],
                },
            },
            {
                "type": "input",
                "block_id": "why",
                "label": plain("Why"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": "value",
                    "multiline": True,
                    "max_length": 9,
                },
            },
            {
                "type": "input",
                "block_id": "note",
                "optional": True,
                "label": plain("Note"),
                "element": {"type": "plain_text_input", "action_id": "value", "placeholder": plain(text)},
            },
        ],
    }


def test_a_modal_is_drawn_with_every_outside_text_as_text() -> None:
    view = {**modal_view(HOSTILE), "id": "V1"}
    modal = OpenModal(view, typed={"why": HOSTILE}, errors={"why": HOSTILE}, problem=HOSTILE)
    markup = Markup(modal_html(modal))
    allowed = TAGS | {"form", "label", "textarea", "input"}
    for tag, attrs in markup.tags:
        assert tag in allowed
        assert not any(name.startswith("on") for name in attrs)
    assert "b" not in {tag for tag, _ in markup.tags}
    assert markup.shown.count(HOSTILE) >= 4  # the section, the label, the option, the typed text, the error
    assert ("option", {"value": '1h"><b>'}) in markup.tags


def open_for(slack: FakeSlack, trigger: str) -> str:
    answer = httpx.post(
        slack.api_url + "views.open",
        headers={"Authorization": f"Bearer {TOKEN}"},
        json={"trigger_id": trigger, "view": modal_view()},
        timeout=5,
    ).json()
    assert answer["ok"], answer
    return str(answer["view"]["id"])


def submit(served: SlackPage, view_id: str, values: Any) -> httpx.Response:
    return httpx.post(
        served.url + "page/view/submit", json={"view_id": view_id, "values": values}, timeout=10
    )


def test_a_modal_is_the_page_person_s_and_its_submission_is_slack_s(page: Any) -> None:
    slack, served, bot = page
    open_for(slack, slack.views.issue_trigger("U0SOMEONE"))  # someone else's modal: not on this page
    assert httpx.get(served.url + "page/state", params={"channel": "C1"}, timeout=5).json()["modal"] is None
    view_id = open_for(slack, slack.views.issue_trigger(USER_ID))
    modal = httpx.get(served.url + "page/state", params={"channel": "C1"}, timeout=5).json()["modal"]
    assert f'data-view="{view_id}"' in modal["html"]
    assert f'data-view="{view_id}"' in httpx.get(served.url, params={"channel": "C1"}, timeout=5).text

    # What Slack's client refuses is shown, and never sent.
    refused = submit(served, view_id, {"how_long": "4h", "why": "0123456789", "note": None}).json()
    assert refused["errors"] == {"why": "Please use 9 characters or fewer."}
    assert submit(served, view_id, {"how_long": "", "why": ""}).json()["errors"] == {
        "how_long": REQUIRED,
        "why": REQUIRED,
    }
    assert bot.received == []

    # The bot's errors beside their fields; one naming no input of the view is Slack's trouble message.
    bot.view_answer = {"response_action": "errors", "errors": {"why": "Say why."}}
    answer = submit(served, view_id, {"how_long": "4h", "why": "drain"}).json()
    assert (answer["closed"], answer["errors"]) == (False, {"why": "Say why."})
    [form] = bot.received
    payload = json.loads(form["payload"][0])
    assert payload["type"] == "view_submission"
    assert payload["user"]["id"] == USER_ID
    assert payload["view"]["id"] == view_id
    assert payload["view"]["private_metadata"] == "signed-by-the-bot"
    assert payload["view"]["state"]["values"] == {
        "how_long": {
            "value": {"type": "static_select", "selected_option": {"text": plain("4h"), "value": "4h"}}
        },
        "why": {"value": {"type": "plain_text_input", "value": "drain"}},
        "note": {"value": {"type": "plain_text_input", "value": None}},
    }
    bot.view_answer = {"response_action": "errors", "errors": {"nope": "x"}}
    assert (
        "not an input of this modal"
        in submit(served, view_id, {"how_long": "4h", "why": "d"}).json()["problem"]
    )

    # Nothing sent but a value of the view's own.
    for values, why in (
        ({"how_long": "1y", "why": "d"}, "not an option"),
        ({"elsewhere": "x"}, "not an input"),
    ):
        answer_4xx = submit(served, view_id, values)
        assert answer_4xx.status_code == 400
        assert why in answer_4xx.json()["error"]
    assert submit(served, "V-unknown", {}).status_code == 404

    bot.view_answer = b""
    assert submit(served, view_id, {"how_long": "4h", "why": "d"}).json()["closed"] is True
    assert httpx.get(served.url + "page/state", params={"channel": "C1"}, timeout=5).json()["modal"] is None
