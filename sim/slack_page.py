"""The demo's page: the fake Slack's channels in a browser, laid out as Slack shows them, live.

Served by the fake Slack itself (`FakeSlack.extra_routes`), on its port:

    GET  /                      the page: channels, the chosen one's messages, a `/proxy` command box
                                (`?channel=ID`; `&focus=TS` one message with its thread open, `&fixed=1`
                                every time shown as 09:41: what the README's pictures are taken of)
    GET  /page/state            {"version", "html"}: the channel's messages once anything changed since `v`
                                (the page's script polls it: no reload)
    GET  /page/files/{id}       a shared file's bytes (PNG charts as images, tables as text)
    POST /page/action           a control pressed: {channel, ts, block_id, action_id, option?}
    POST /page/command          the command box: {channel, text}
    POST /page/view/submit      the open modal's Submit: {view_id, values: {block_id: typed or chosen}}
    POST /page/view/close       its Cancel: {view_id}

An action or a command is sent to the bot as Slack sends it: a signed `block_actions` payload or slash
command form to the bot's `/slack/events`, with a `response_url` of the fake's, whose answers the page shows.
The signing secret stays here, server-side: the browser names what was pressed, never what is signed, and
a button's value is read from the message the fake holds, not taken from the browser.

A modal the bot opens with a press's trigger (`views.open`) is the page's person's (the trigger was issued
for them) and is drawn over the channel (`sim.slack_page_modal`); Submit posts the signed `view_submission`
Slack would (the view as the fake holds it, the typed values as Slack formats them) and shows the bot's
answer as Slack does: nothing or `clear` closes it, `errors` shows each beside its field, `update` redraws.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import Any
from urllib.parse import urlencode

import httpx
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from sim.slack_api import FakeSlack
from sim.slack_mrkdwn import escape
from sim.slack_page_modal import ModalInputError, OpenModal, modal_html, named_errors, submitted_values
from sim.slack_page_view import PNG_MAGIC, Answer, ChannelSnapshot, channel_html
from sim.slack_views import view_problem
from sim.slack_workspace import TEAM_ID, Channel, Message

USER_ID, USER_NAME = "U0DEMO001", "you"
APP_ID = "ADEMO"
COMMAND = "/proxy"
SEND_TIMEOUT = 10.0
VIEW_ANSWER_WITHIN = 3.0  # Slack gives an app 3 s to answer a view_submission, then shows an error
TROUBLE = "We had some trouble connecting. Try again?"  # what Slack's modal then says
MAX_COMMAND = 2000
STATIC = ("page.css", "page.js")
_TYPES = {"css": "text/css", "js": "text/javascript"}
# The page is ours alone: no script but its own, no frames; images from here, or an image block's URL.
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' http: https:; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)


class PageInputError(ValueError):
    """What the page's script sent is not something that can be pressed or typed: 4xx, naming the field."""

    def __init__(self, field: str, why: str, status: int = 400) -> None:
        super().__init__(f"{field}: {why}")
        self.status = status


@dataclass(frozen=True)
class Sent:
    """What the bot answered a signed request the page made."""

    status: int
    body: str


class SlackPage:
    """The page over one fake Slack; `connect` names the bot it sends to (again for each bot of a tour)."""

    def __init__(self, slack: FakeSlack) -> None:
        self.slack = slack
        self.events_url: str | None = None
        self._secret: str | None = None
        self._lock = threading.Lock()
        self._keys: dict[str, str] = {}  # response_url key -> channel ID
        self._answers: dict[str, list[Answer]] = {}
        self._seen = 0
        self._presses = itertools.count(1)
        self._wall_offset = time.time() - time.monotonic()  # the files' clock is monotonic
        self._modals: dict[str, OpenModal] = {}  # view ID -> how it is shown
        self._closed: set[str] = set()
        self._modal_changes = 0
        slack.extra_routes.extend(self.routes())

    def connect(self, events_url: str, signing_secret: str) -> None:
        """Send presses and commands to the bot at `events_url`, signed with its signing secret."""
        with self._lock:
            self.events_url, self._secret = events_url, signing_secret

    @property
    def url(self) -> str:
        return f"{self.slack.base_url}/"

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/", self._index, methods=["GET"]),
            Route("/page/state", self._state, methods=["GET"]),
            Route("/page/files/{file_id}", self._file, methods=["GET"]),
            Route("/page/static/{name}", self._static, methods=["GET"]),
            Route("/page/action", self._action, methods=["POST"]),
            Route("/page/command", self._command, methods=["POST"]),
            Route("/page/view/submit", self._view_submit, methods=["POST"]),
            Route("/page/view/close", self._view_close, methods=["POST"]),
        ]

    # -- what the page shows --------------------------------------------------------------------------

    def version(self) -> int:
        """Grows with every call the fake Slack answers, every answer it receives, every modal change."""
        return len(self.slack.calls) + len(self.slack.responses) + self._modal_changes

    def modal(self) -> OpenModal | None:
        """The modal open for the page's person: the last view opened for them and not closed."""
        opened = [v for v in self.slack.views.opened_by(USER_ID) if v["id"] not in self._closed]
        if not opened:
            return None
        view = opened[-1]
        with self._lock:
            return self._modals.setdefault(view["id"], OpenModal(dict(view)))

    def _modal_state(self) -> dict[str, str] | None:
        modal = self.modal()
        return None if modal is None else {"key": modal.key, "html": modal_html(modal)}

    def channels(self) -> list[Channel]:
        return [c for c in list(self.slack.workspace.channels.values()) if c.member]

    def snapshot(
        self, channel: str, *, fixed: bool = False, open_threads: frozenset[str] = frozenset()
    ) -> ChannelSnapshot:
        top = sorted(self.slack.top_level(channel), key=lambda m: float(m.ts))
        threads = {m.ts: self.slack.thread(channel, m.ts) for m in top}
        files = [
            {**u, "shown_at": self._wall_offset + float(u["at"])}
            for u in self.slack.shown_uploads()
            if u.get("channel_id") == channel
        ]
        return ChannelSnapshot(top, threads, files, self.answers(channel), fixed, open_threads)

    def answers(self, channel: str) -> list[Answer]:
        """The answers sent through the response_urls of presses and commands made in `channel`."""
        with self._lock:
            fresh = self.slack.responses[self._seen :]
            self._seen += len(fresh)
            for payload in fresh:
                where = self._keys.get(str(payload.get("key")))
                if where is not None:
                    self._answers.setdefault(where, []).append(Answer(time.time(), payload))
            return list(self._answers.get(channel, ()))

    def default_channel(self) -> str | None:
        """The channel the page opens on: the last one a message was posted to, else the first."""
        posted = [m for m in self.slack.top_level() if m.channel in {c.id for c in self.channels()}]
        if posted:
            return max(posted, key=lambda m: float(m.ts)).channel
        channels = self.channels()
        return channels[0].id if channels else None

    async def _index(self, request: Request) -> Response:
        query = request.query_params
        channel = query.get("channel") or self.default_channel()
        known = {c.id: c for c in self.channels()}
        if channel is not None and channel not in known:
            return _error_page(f"channel: no channel {channel!r} in this workspace", 404)
        focus = query.get("focus")
        fixed = query.get("fixed") == "1"
        html = self._page_html(known, channel, focus, fixed)
        return HTMLResponse(html, headers=_page_headers())

    def _page_html(
        self, known: Mapping[str, Channel], channel: str | None, focus: str | None, fixed: bool
    ) -> str:
        snap = None if channel is None else self.snapshot(channel, fixed=fixed, open_threads=_open(focus))
        if snap is not None and focus is not None:  # that message alone, its thread open
            top = [m for m in snap.top if m.ts == focus]
            snap = ChannelSnapshot(top, snap.threads, snap.files, (), fixed, _open(focus))
        messages = channel_html(snap) if snap is not None else '<div class="empty">No channel yet.</div>'
        sidebar = "".join(_channel_link(c, c.id == channel) for c in known.values())
        name = known[channel].name if channel is not None else ""
        modal = self._modal_state() if focus is None else None  # a picture of a message shows no modal
        template = Template(_asset("index.html"))
        return template.substitute(
            channel_id=escape(channel or ""),
            channel_name=escape(name),
            sidebar=sidebar,
            messages=messages,
            modal=modal["html"] if modal else "",
            modal_key=escape(modal["key"]) if modal else "",
            version=self.version(),
            mode="focus" if focus is not None else "live",
        )

    async def _state(self, request: Request) -> Response:
        query = request.query_params
        channel = query.get("channel") or ""
        if channel not in {c.id for c in self.channels()}:
            return JSONResponse({"ok": False, "error": "channel: no such channel"}, status_code=404)
        version = self.version()
        if query.get("v") == str(version):
            return JSONResponse({"ok": True, "version": version})
        opened = frozenset(t for t in (query.get("open") or "").split(",") if t)
        html = channel_html(self.snapshot(channel, open_threads=opened))
        return JSONResponse({"ok": True, "version": version, "html": html, "modal": self._modal_state()})

    async def _file(self, request: Request) -> Response:
        file_id = request.path_params["file_id"]
        upload = next((u for u in self.slack.shown_uploads() if u["id"] == file_id), None)
        if upload is None:
            return Response("file: no such file", status_code=404, media_type="text/plain")
        content = bytes(upload.get("content") or b"")
        kind = "image/png" if content.startswith(PNG_MAGIC) else "text/plain; charset=utf-8"
        return Response(content, media_type=kind, headers={"X-Content-Type-Options": "nosniff"})

    async def _static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", status_code=404, media_type="text/plain")
        kind = _TYPES[name.rsplit(".", 1)[1]]
        return Response(_asset(name), media_type=kind, headers={"X-Content-Type-Options": "nosniff"})

    # -- what the page sends ----------------------------------------------------------------------------

    async def _action(self, request: Request) -> Response:
        try:
            sent = await self.press(**_press_fields(await _json_object(request)))
        except PageInputError as err:
            return JSONResponse({"ok": False, "error": str(err)}, status_code=err.status)
        return _sent_answer(sent)

    async def _command(self, request: Request) -> Response:
        try:
            body = await _json_object(request)
            sent = await self.command(_string(body, "channel"), _string(body, "text"))
        except PageInputError as err:
            return JSONResponse({"ok": False, "error": str(err)}, status_code=err.status)
        return _sent_answer(sent)

    async def press(
        self, channel: str, ts: str, block_id: str, action_id: str, option: str | None = None
    ) -> Sent:
        """Press the control `action_id` of block `block_id` on the message at `ts`, as Slack sends it."""
        msg = self._message(channel, ts)
        element = find_element(msg.blocks, block_id, action_id)
        if element is None:
            why = f"no control {action_id!r} in block {block_id!r} of that message"
            raise PageInputError("action_id", why)
        action = action_of(element, block_id, option)
        key = self._response_key(channel)
        trigger = self.slack.views.issue_trigger(USER_ID)  # a modal may be opened with it, within 3 s
        payload = block_actions(msg, self._channel(channel), action, self.slack.response_url(key), trigger)
        return await self._send({"payload": json.dumps(payload)})

    async def command(self, channel: str, text: str) -> Sent:
        """Type `/proxy TEXT` in `channel`, as Slack sends a slash command."""
        if len(text) > MAX_COMMAND:
            raise PageInputError("text", f"longer than {MAX_COMMAND} characters")
        found = self._channel(channel)
        key = self._response_key(channel)
        form = slash_command(
            found, text.strip(), self.slack.response_url(key), self.slack.views.issue_trigger(USER_ID)
        )
        return await self._send(form)

    async def _view_submit(self, request: Request) -> Response:
        try:
            body = await _json_object(request)
            answer = await self.submit(_string(body, "view_id"), _typed(body.get("values")))
        except PageInputError as err:
            return JSONResponse({"ok": False, "error": str(err)}, status_code=err.status)
        return JSONResponse({"ok": True, **answer})

    async def _view_close(self, request: Request) -> Response:
        try:
            self.close(_string(await _json_object(request), "view_id"))
        except PageInputError as err:
            return JSONResponse({"ok": False, "error": str(err)}, status_code=err.status)
        return JSONResponse({"ok": True, "closed": True})

    def _open_modal(self, view_id: str) -> OpenModal:
        modal = self.modal()
        if modal is None or modal.id != view_id:
            raise PageInputError("view_id", f"no modal {view_id!r} is open for {USER_NAME}", 404)
        return modal

    def close(self, view_id: str) -> None:
        """Cancel: the modal closes (Slack tells the app only when the view asks, `notify_on_close`)."""
        self._open_modal(view_id)
        self._close(view_id)

    def _close(self, *view_ids: str) -> None:
        with self._lock:
            self._closed.update(view_ids)
            self._modal_changes += 1

    async def submit(self, view_id: str, typed: Mapping[str, str | None]) -> dict[str, Any]:
        """Submit the open modal with `typed` (block ID -> text, or the chosen option's value), as Slack:
        what its client refuses is shown and not sent; else the signed view_submission, and its answer."""
        modal = self._open_modal(view_id)
        try:
            values, refused = submitted_values(modal.view, typed)
        except ModalInputError as err:
            raise PageInputError(err.field, str(err)) from None
        modal.typed, modal.errors, modal.problem = dict(typed), refused, ""
        if not refused:
            payload = self.slack.views.submission(view_id, values, user=USER_ID, user_name=USER_NAME)
            payload |= {
                "user": _who(),
                "team": {"id": TEAM_ID, "domain": "proxybot-sim"},
                "api_app_id": APP_ID,
            }
            payload["view"] = {**modal.view, "state": {"values": values}}
            try:
                sent = await self._send({"payload": json.dumps(payload)}, timeout=VIEW_ANSWER_WITHIN)
            except PageInputError as err:  # no bot, or no answer in time: the modal stays, saying so
                modal.problem = f"{TROUBLE} ({err})"
            else:
                self._answered(modal, sent)
        modal.revision += 1
        with self._lock:
            self._modal_changes += 1
            closed = modal.id in self._closed
        return {"closed": closed, "errors": modal.errors, "problem": modal.problem}

    def _answered(self, modal: OpenModal, sent: Sent) -> None:
        """The bot's answer to a submission, shown as Slack shows it."""
        if not 200 <= sent.status < 300:
            modal.problem = f"{TROUBLE} (the bot answered HTTP {sent.status})"
            return
        if not sent.body.strip():
            self._close(modal.id)
            return
        try:
            answer = json.loads(sent.body)
        except ValueError:
            answer = None
        action = answer.get("response_action") if isinstance(answer, dict) else None
        if not isinstance(answer, dict):
            modal.problem = f"{TROUBLE} (the bot's answer is not JSON)"
        elif action == "errors":
            modal.errors, modal.problem = named_errors(modal.view, answer.get("errors"))
        elif action == "clear":
            self._close(*(v["id"] for v in self.slack.views.opened_by(USER_ID)))
        elif action == "update" and isinstance(answer.get("view"), dict) and not view_problem(answer["view"]):
            modal.view = {
                **answer["view"],
                "id": modal.id,
                "state": {"values": {}},
                "hash": modal.view.get("hash"),
            }
            modal.typed, modal.errors = {}, {}
        else:
            modal.problem = f"{TROUBLE} (the page does not show the answer {str(action)[:40]!r})"

    def _message(self, channel: str, ts: str) -> Message:
        self._channel(channel)
        found = next((m for m in self.slack.top_level(channel) if m.ts == ts), None)
        for parent in self.slack.top_level(channel) if found is None else ():
            found = next((m for m in self.slack.thread(channel, parent.ts) if m.ts == ts), found)
        if found is None:
            raise PageInputError("ts", f"no message at {ts!r} in that channel", 404)
        return found

    def _channel(self, channel: str) -> Channel:
        found = next((c for c in self.channels() if c.id == channel), None)
        if found is None:
            raise PageInputError("channel", f"no channel {channel!r} in this workspace", 404)
        return found

    def _response_key(self, channel: str) -> str:
        key = f"page-{next(self._presses)}-{secrets.token_hex(4)}"
        with self._lock:
            self._keys[key] = channel
        return key

    async def _send(self, form: Mapping[str, str], timeout: float = SEND_TIMEOUT) -> Sent:
        with self._lock:
            url, secret = self.events_url, self._secret
        if url is None or secret is None:
            raise PageInputError("bot", "no bot is running to send it to", 503)
        body = urlencode(form).encode()
        headers = signed_headers(secret, body, time.time())
        async with httpx.AsyncClient(timeout=timeout) as client:
            try:
                answer = await client.post(url, content=body, headers=headers)
            except httpx.HTTPError as err:
                raise PageInputError("bot", f"the bot did not answer: {type(err).__name__}", 502) from err
        return Sent(answer.status_code, answer.text)


def signed_headers(secret: str, body: bytes, now: float) -> dict[str, str]:
    """Slack's request signature: `v0=` HMAC-SHA256 over `v0:timestamp:body` with the signing secret."""
    stamp = str(int(now))
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": f"v0={digest}",
    }


def find_element(blocks: list[Any], block_id: str, action_id: str) -> Mapping[str, Any] | None:
    """The interactive element `action_id` of block `block_id` (in its elements or as its accessory)."""
    for block in blocks:
        if not isinstance(block, Mapping) or str(block.get("block_id", "")) != block_id:
            continue
        candidates = [*(block.get("elements") or []), block.get("accessory")]
        for element in candidates:
            if isinstance(element, Mapping) and element.get("action_id") == action_id:
                return element
    return None


def action_of(element: Mapping[str, Any], block_id: str, option: str | None) -> dict[str, Any]:
    """The `actions[0]` of a block_actions payload for pressing `element` (choosing `option` of a menu)."""
    action: dict[str, Any] = {
        "type": element.get("type"),
        "action_id": element.get("action_id"),
        "block_id": block_id,
        "action_ts": f"{time.time():.6f}",
    }
    if element.get("type") == "button":
        action["text"] = element.get("text")
        if "value" in element:
            action["value"] = element["value"]
        return action
    chosen = next((o for o in _options(element) if o.get("value") == option), None)
    if chosen is None:
        raise PageInputError("option", f"{option!r} is not an option of that menu")
    action["selected_option"] = {"text": chosen.get("text"), "value": chosen.get("value")}
    return action


def _options(element: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = [o for o in element.get("options") or [] if isinstance(o, Mapping)]
    for group in element.get("option_groups") or []:
        if isinstance(group, Mapping):
            found += [o for o in group.get("options") or [] if isinstance(o, Mapping)]
    return found


def _who() -> dict[str, str]:
    return {"id": USER_ID, "username": USER_NAME, "name": USER_NAME, "team_id": TEAM_ID}


def block_actions(
    msg: Message, channel: Channel, action: dict[str, Any], response_url: str, trigger_id: str
) -> dict[str, Any]:
    """A block_actions payload as Slack sends it for a press on a message of the app's."""
    message = msg.as_history(with_metadata=True)
    return {
        "type": "block_actions",
        "user": _who(),
        "api_app_id": APP_ID,
        "token": "demo-verification-token",
        "container": {
            "type": "message",
            "message_ts": msg.ts,
            "channel_id": channel.id,
            "is_ephemeral": False,
        },
        "trigger_id": trigger_id,
        "team": {"id": TEAM_ID, "domain": "proxybot-sim"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel.id, "name": channel.name},
        "message": message,
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [action],
    }


def slash_command(channel: Channel, text: str, response_url: str, trigger_id: str) -> dict[str, str]:
    """A slash command's form fields as Slack sends them."""
    return {
        "token": "demo-verification-token",
        "team_id": TEAM_ID,
        "team_domain": "proxybot-sim",
        "channel_id": channel.id,
        "channel_name": channel.name,
        "user_id": USER_ID,
        "user_name": USER_NAME,
        "command": COMMAND,
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }


def _open(focus: str | None) -> frozenset[str]:
    return frozenset() if focus is None else frozenset({focus})


def _channel_link(channel: Channel, current: bool) -> str:
    css = ' class="current"' if current else ""
    return f'<a{css} href="/?channel={escape(channel.id)}"># {escape(channel.name)}</a>'


def _asset(name: str) -> str:
    return resources.files("sim").joinpath("page_static", name).read_text(encoding="utf-8")


def _page_headers() -> dict[str, str]:
    return {"Content-Security-Policy": _CSP, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


def _error_page(text: str, status: int) -> HTMLResponse:
    body = f'<p class="page-error">{escape(text)}</p>'
    return HTMLResponse(body, status_code=status, headers=_page_headers())


async def _json_object(request: Request) -> dict[str, Any]:
    # Only the page's own script may press: a JSON body (another site's form or no-cors fetch cannot send
    # one without a preflight this server never grants), from the page's origin when the browser names one.
    if not request.headers.get("content-type", "").startswith("application/json"):
        raise PageInputError("content-type", "must be application/json", 415)
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
        raise PageInputError("origin", f"{origin!r} is not this page", 403)
    try:
        body = json.loads(await request.body() or b"null")
    except ValueError:
        raise PageInputError("body", "not JSON") from None
    if not isinstance(body, dict):
        raise PageInputError("body", "not a JSON object")
    return body


def _string(body: Mapping[str, Any], field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str) or not value:
        raise PageInputError(field, "missing, or not a string")
    return value


def _typed(values: object) -> dict[str, str | None]:
    """The modal's fields as the page's script sends them: block ID -> a string (or null: nothing)."""
    if not isinstance(values, dict):
        raise PageInputError("values", "missing, or not a JSON object")
    for block_id, value in values.items():
        if value is not None and not isinstance(value, str):
            raise PageInputError("values", f"{str(block_id)[:60]!r}: not a string")
    return {str(k): v for k, v in values.items()}


def _press_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {k: _string(body, k) for k in ("channel", "ts", "action_id")}
    for name in ("block_id", "option"):  # a block without an ID has "" (Slack makes one up)
        if body.get(name) is not None and not isinstance(body.get(name), str):
            raise PageInputError(name, "not a string")
    return fields | {"block_id": body.get("block_id") or "", "option": body.get("option")}


def _sent_answer(sent: Sent) -> Response:
    ok = 200 <= sent.status < 300
    body: dict[str, object] = {"ok": ok, "status": sent.status}
    if not ok:
        body["error"] = f"the bot answered HTTP {sent.status}: {sent.body[:300]}"
    return JSONResponse(body, status_code=200 if ok else 502)
