"""Shared pieces of the upstream fault tests: two client clusters, alerts for either, `/proxy` over HTTP.

The simulator serves team-a (platform/crd-store, whose target goes down in `target-down`) and team-b
(platform/crd-store-b, healthy) behind one HTTPS port; `SimServer.set_fault` makes one cluster's API server
misbehave. `wrong_certificate` gives a kubeconfig a CA that did not sign the server's certificate, which is
what a client sees of a server presenting the wrong one. `ask` sends `/proxy ...` as Slack does: a signed
form POST to the running bot's `/slack/events`, through bolt's own verification and dispatch; the answer
arrives at the fake Slack's `response_url`; `press` does the same for a button on a message. `Unanswering`
is a Prometheus or Alertmanager that accepts connections and never answers.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
import yaml

from bot.alerts.outbox import DETAILS_DEFER
from sim.server import SimServer
from sim.slack_api import FakeSlack, Message, iter_texts
from sim.slack_views import form_body
from tests.e2e.stack import (
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    BotProcess,
    alert_entry,
    auth,
    notification,
    now,
    proxy_alert,
    text_of,
    write_bot_config,
)
from tests.fakes.slack_requests import button_body, command_body, signed
from tests.waiting import wait_until

SPEED = 20
HEALTHY, FAULTY = "team-a", "team-b"
TARGETS = {HEALTHY: "platform/crd-store", FAULTY: "platform/crd-store-b"}
# team-a posts to a channel of its own: Slack's pace of one post a second per channel must not be what
# times one cluster's alert after the other's.
CHANNELS = {HEALTHY: "#team-a", FAULTY: CHANNEL}
OPS, OPS_NAME = "C0OPS0001", "ops"
ONCALL = "U0ONCALL1"
_keys = itertools.count()


@pytest.fixture
def two_clusters() -> Iterator[SimServer]:
    # target-down at 20x on team-a, already down (from t=60): team-a's message has something to diagnose.
    with SimServer(scenario="target-down", speed=SPEED, clients=2) as srv:
        with srv.lock:
            srv.world.advance_to(120.0)
        yield srv


@pytest.fixture
def fault_slack() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=BOT_TOKEN, channels=[*CHANNELS.values(), OPS]) as fake:
        yield fake


def fault_config(sim: SimServer, workdir: Path, slack: FakeSlack, **sections: Any) -> Path:
    """The e2e bot config over both clusters, each to its channel, `#ops` may query both; `sections` replace
    top-level keys."""
    path = write_bot_config(sim, workdir, slack.api_url)
    doc = yaml.safe_load(path.read_text())
    for cluster in doc["clusters"]:
        cluster["channel"] = CHANNELS[cluster["name"]]
    doc["access"] = {"channels": [{"channel": "#ops", "clusters": ["*"]}], "silencers": [ONCALL]}
    doc.update(sections)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def kubeconfig_of(config: Path, cluster: str) -> Path:
    return config.parent / f"{config.stem}.kubeconfigs" / f"{cluster}.yaml"


def wrong_certificate(kubeconfig: Path) -> None:
    """Trust another CA in every cluster of the kubeconfig: the server's certificate no longer verifies."""
    doc = yaml.safe_load(kubeconfig.read_text())
    other = base64.b64encode(trustme.CA(organization_name="not the simulator").cert_pem.bytes()).decode()
    for entry in doc["clusters"]:
        entry["cluster"]["certificate-authority-data"] = other
    kubeconfig.write_text(yaml.safe_dump(doc, sort_keys=False))


def post_alert(bot: BotProcess, cluster: str, **labels: str) -> httpx.Response:
    """One firing alert of the guide for `cluster`'s target, as Alertmanager delivers it."""
    entry = alert_entry(proxy_alert(target=TARGETS[cluster], cluster=cluster, **labels), now())
    body = json.dumps(notification([entry])).encode()
    headers = {**auth(), "Content-Type": "application/json"}
    return httpx.post(f"{bot.url}/alertmanager", content=body, headers=headers, timeout=10.0)


def message_about(
    slack: FakeSlack, cluster: str, timeout: float = 30.0, alertname: str | None = None
) -> Message:
    """The one top-level message of an alert group of `cluster`'s target (waits for it; fails if two)."""
    target = TARGETS[cluster]

    def found() -> list[Message]:
        # "on <target> (" ends the name: platform/crd-store is a prefix of platform/crd-store-b.
        return [
            m
            for m in slack.top_level(CHANNELS[cluster])
            if f"on {target} (" in m.text and (alertname is None or alertname in m.text)
        ]

    wait_until(found, timeout, f"{target}'s post")
    messages = found()
    assert len(messages) == 1, [m.text for m in messages]
    return messages[0]


# The details reply follows its message by DETAILS_DEFER (5 s) plus delivery.
DETAILS_WAIT = DETAILS_DEFER + 5.0


def thread_text(slack: FakeSlack, message: Message) -> str:
    """The message and its thread replies (the full detail is a reply, posted shortly after the message:
    waited for), as one text."""

    def replies() -> list[Message]:
        return slack.thread(message.channel, message.ts)

    wait_until(
        lambda: any(r.text.startswith("Details") for r in replies()), DETAILS_WAIT, "the details reply"
    )
    return "\n".join(text_of(m) for m in [message, *replies()])


def ask(
    bot: BotProcess, slack: FakeSlack, text: str, timeout: float = 40.0, secret: str = SIGNING_SECRET
) -> tuple[float, dict[str, Any]]:
    """`/proxy text` from #ops, signed as Slack signs it: (seconds until the final answer, that answer)."""
    key = f"fault-{next(_keys)}"
    body = command_body(
        text, slack.response_url(key), user=ONCALL, channel=OPS, channel_name=OPS_NAME, user_name="oncall"
    )
    started = time.monotonic()
    acked = httpx.post(
        f"{bot.url}/slack/events", content=body, headers=signed(body, secret=secret), timeout=10.0
    )
    assert (acked.status_code, acked.text) == (200, ""), acked.text

    def final() -> dict[str, Any] | None:
        mine = [r for r in slack.responses if r["key"] == key]
        return mine[-1] if mine and not _is_progress(mine[-1]) else None

    left = started + timeout - time.monotonic()
    answer = wait_until(final, left, f"an answer to /proxy {text} within {timeout:g}s", interval=0.05)
    return time.monotonic() - started, answer


def answer_text(answer: Mapping[str, Any]) -> str:
    return "\n".join([str(answer.get("text", "")), *iter_texts(answer.get("blocks") or [])])


def _is_progress(response: Mapping[str, Any]) -> bool:
    # "reading …" notes are one section; every check's answer has a header first.
    return len(response.get("blocks") or []) <= 1 and str(response.get("text", "")).endswith("…")


class Unanswering:
    """A TCP listener that accepts every connection and never answers (a hung Prometheus or Alertmanager);
    the connections are closed when the `with` block ends."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                self._held.append(self._listener.accept()[0])

    def __enter__(self) -> Unanswering:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in [*self._held, self._listener]:
            conn.close()


def press(
    bot: BotProcess,
    slack: FakeSlack,
    message: Message,
    label: str,
    timeout: float = 30.0,
    secret: str = SIGNING_SECRET,
    trigger_id: str = "1.2.3",
) -> tuple[float, str]:
    """Press the button `label` on `message` as Slack sends it: (seconds until answered, the answer)."""
    buttons = [e for block in message.blocks for e in block.get("elements", []) if e.get("type") == "button"]
    [button] = [b for b in buttons if b["text"]["text"] == label]
    key = f"press-{next(_keys)}"
    body = button_body(
        button["action_id"],
        button["value"],
        slack.response_url(key),
        user=ONCALL,
        channel=message.channel,
        channel_name=next(n for n in CHANNELS.values() if slack.channel_id(n) == message.channel).lstrip("#"),
        message_ts=message.ts,
        trigger_id=trigger_id,
    )
    started = time.monotonic()
    acked = httpx.post(
        f"{bot.url}/slack/events", content=body, headers=signed(body, secret=secret), timeout=10.0
    )
    assert (acked.status_code, acked.text) == (200, ""), acked.text
    left = started + timeout - time.monotonic()
    answers = wait_until(
        lambda: [r for r in slack.responses if r["key"] == key],
        left,
        f"an answer to {label} within {timeout:g}s",
        interval=0.05,
    )
    return time.monotonic() - started, str(answers[-1]["text"])


def silence_through_form(
    bot: BotProcess, slack: FakeSlack, message: Message, values: Mapping[str, Any], timeout: float = 30.0
) -> tuple[float, dict[str, Any]]:
    """Press *Silence…* on `message` (a fresh trigger id), then submit the modal it opens with `values`:
    (seconds from the submission to its answer, the answer's JSON; empty when the modal closes)."""
    opened = len(slack.views.opened)
    buttons = [e for block in message.blocks for e in block.get("elements", []) if e.get("type") == "button"]
    [button] = [b for b in buttons if b["text"]["text"] == "Silence…"]
    body = button_body(
        button["action_id"],
        button["value"],
        slack.response_url(f"form-{next(_keys)}"),
        user=ONCALL,
        channel=message.channel,
        channel_name=next(n for n in CHANNELS.values() if slack.channel_id(n) == message.channel).lstrip("#"),
        message_ts=message.ts,
        trigger_id=slack.views.issue_trigger(),
    )
    acked = httpx.post(
        f"{bot.url}/slack/events", content=body, headers=signed(body, secret=SIGNING_SECRET), timeout=10.0
    )
    assert (acked.status_code, acked.text) == (200, ""), acked.text
    wait_until(lambda: len(slack.views.opened) > opened, timeout, "the silence form")
    view = slack.views.opened[-1]
    payload = slack.views.submission(view["id"], values, user=ONCALL, user_name="oncall")
    submitted = form_body(payload)
    started = time.monotonic()
    headers = signed(submitted, secret=SIGNING_SECRET)
    answer = httpx.post(f"{bot.url}/slack/events", content=submitted, headers=headers, timeout=10.0)
    took = time.monotonic() - started
    assert answer.status_code == 200, answer.text
    return took, answer.json() if answer.content else {}
