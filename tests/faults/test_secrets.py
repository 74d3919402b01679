"""No secret ever leaves proxybot: not in a log line, a Slack payload, `/metrics` or `--json` output.

Every secret gets a value of its own that nothing else contains: the bot token, the signing secret, the
Socket Mode app token, the webhook token, the password in a `postgresql://` store URL (a role of its own on
the test PostgreSQL server), and the kubeconfigs' tokens (the simulator's, random). `proxybot serve` runs at
`server.log_level: debug`, so the libraries' own debug lines are in its output too, and goes through the
end-to-end paths: webhooks to Slack posts, edits and replies, `/proxy status`, the *Probe now* button, the
digest (`/proxy digest`), `/metrics`; `proxybot check-config --json` (with and without `--serve`) reads
the same config. A second `serve` runs in Socket Mode with the app token, which the fake Slack refuses.
Then every byte of output, every request the fake Slack received (parameters and headers' tokens apart:
the bot token is meant to reach Slack) and every answer is searched for each secret.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
import yaml
from psycopg import sql

from sim.ports import free_port
from sim.postgres import PostgresServer
from sim.server import SimServer
from sim.slack_api import FakeSlack
from tests.e2e.stack import CHANNEL, BotProcess, alert_entry, notification, now, proxy_alert, proxybot_command
from tests.fakes import postgres
from tests.faults import upstream_faults
from tests.faults.upstream_faults import (
    CHANNELS,
    FAULTY,
    OPS,
    TARGETS,
    ask,
    fault_config,
    message_about,
    press,
)
from tests.waiting import wait_until

two_clusters = upstream_faults.two_clusters
postgres_server = postgres.postgres_server

BOT_TOKEN = "xoxb-1111-leakcheck-bot-9a7c5e3f1d"
SIGNING_SECRET = "leakcheck-signing-4e2a8c6b0d1f"
APP_TOKEN = "xapp-1-A1111-leakcheck-app-7d3f9b1e5c"
WEBHOOK_TOKEN = "leakcheck-webhook-2c8e4a6f0b3d"
STORE_PASSWORD = "leakcheck-store-5b9d3f7a1e6c"
TIMEOUT = 30.0


@dataclass
class Leaks:
    """Where each secret was found, if anywhere."""

    secrets: dict[str, str]
    found: list[str]

    def search(self, where: str, text: str) -> None:
        for name, value in self.secrets.items():
            if value in text:
                at = text.index(value)
                self.found.append(f"{name} in {where}: …{text[max(0, at - 120) : at + 40]}…")


@pytest.fixture
def leak_slack() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=BOT_TOKEN, channels=[*CHANNELS.values(), OPS]) as fake:
        yield fake


@pytest.fixture
def store_url(postgres_server: PostgresServer) -> str:
    """A database owned by a role whose password is STORE_PASSWORD."""
    role, database = f"leakcheck_{secrets.token_hex(3)}", f"leakcheck_{secrets.token_hex(3)}"
    with psycopg.connect(postgres_server.url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(STORE_PASSWORD)
            )
        )
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(role))
        )
    return f"postgresql://{role}:{STORE_PASSWORD}@{postgres_server.host}:{postgres_server.port}/{database}"


def leak_config(sim: SimServer, workdir: Path, slack: FakeSlack, store_url: str, *, app_token: bool) -> Path:
    path = fault_config(
        sim,
        workdir,
        slack,
        alertmanager={"url": "http://127.0.0.1:9", "webhook_token": WEBHOOK_TOKEN},
        store={"url": store_url},
        server={"log_level": "debug"},
        digest={"enabled": False, "channel": CHANNEL},
    )
    doc = yaml.safe_load(path.read_text())
    doc["slack"].update(bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET)
    if app_token:
        doc["slack"]["app_token"] = APP_TOKEN
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def kubeconfig_tokens(config: Path) -> dict[str, str]:
    tokens = {}
    for kubeconfig in sorted(config.parent.glob(f"{config.stem}.kubeconfigs/*.yaml")):
        for user in yaml.safe_load(kubeconfig.read_text())["users"]:
            tokens[f"kubeconfig token of {kubeconfig.stem}/{user['name']}"] = user["user"]["token"]
    return tokens


def post(bot: BotProcess, body: bytes) -> None:
    headers = {"Authorization": f"Bearer {WEBHOOK_TOKEN}", "Content-Type": "application/json"}
    answer = httpx.post(f"{bot.url}/alertmanager", content=body, headers=headers, timeout=10.0)
    assert answer.status_code == 202, answer.text


def check_config(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [*proxybot_command(), "check-config", "--config", str(config), "--json", *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_no_secret_reaches_a_log_a_slack_payload_metrics_or_json(
    two_clusters: SimServer, leak_slack: FakeSlack, store_url: str, tmp_path: Path
) -> None:
    slack = leak_slack
    config = leak_config(two_clusters, tmp_path / "http", slack, store_url, app_token=False)
    leaks = Leaks(
        {
            "the bot token": BOT_TOKEN,
            "the signing secret": SIGNING_SECRET,
            "the app token": APP_TOKEN,
            "the webhook token": WEBHOOK_TOKEN,
            "the store password": STORE_PASSWORD,
            **kubeconfig_tokens(config),
        },
        [],
    )
    outputs: dict[str, str] = {}
    with BotProcess(config, tmp_path / "serve-http.log") as bot:
        target = TARGETS[FAULTY]
        started = now()
        first = alert_entry(proxy_alert(target=target, cluster=FAULTY), started)
        second = alert_entry(
            proxy_alert(target=target, cluster=FAULTY, group_version="data.example.com/v1alpha1"), started
        )
        post(bot, json.dumps(notification([first])).encode())
        message = message_about(slack, FAULTY)
        post(bot, json.dumps(notification([first, second])).encode())  # an edit and a thread reply
        wait_until(lambda: slack.thread(message.channel, message.ts), TIMEOUT, "the update's reply")
        outputs["/proxy status"] = json.dumps(ask(bot, slack, f"status {target}", secret=SIGNING_SECRET)[1])
        outputs["/proxy digest"] = json.dumps(ask(bot, slack, "digest", secret=SIGNING_SECRET)[1])
        outputs["Probe now"] = press(bot, slack, message, "Probe now", secret=SIGNING_SECRET)[1]
        outputs["/metrics"] = httpx.get(f"{bot.url}/metrics", timeout=5.0).text
        outputs["/readyz"] = httpx.get(f"{bot.url}/readyz", timeout=5.0).text
        wait_until(lambda: "Proxy fleet digest" in _posted_texts(slack), TIMEOUT, "the digest's post")
    served = bot.log_text()
    assert " DEBUG " in served  # the libraries' debug lines are in it: the level took effect

    for extra in ((), ("--serve",)):
        done = check_config(config, *extra)
        assert done.returncode in (0, 1), done.stderr
        json.loads(done.stdout)  # --json is JSON
        outputs[f"check-config --json {' '.join(extra)}"] = done.stdout + done.stderr

    # The store unreachable: the error paths that name the store (a URL with its password) speak too.
    dead_store = leak_config(
        two_clusters, tmp_path / "dead", slack, _at_port(store_url, free_port()), app_token=False
    )
    done = check_config(dead_store, "--serve")
    assert done.returncode != 0, done.stdout
    assert json.loads(done.stdout)["ok"] is False
    outputs["check-config --json --serve, store unreachable"] = done.stdout + done.stderr
    refused = subprocess.run(
        [*proxybot_command(), "serve", "--config", str(dead_store), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2, refused.stderr
    assert "proxybot serve cannot start" in refused.stderr
    outputs["serve with the store unreachable"] = refused.stdout + refused.stderr

    socket_config = leak_config(two_clusters, tmp_path / "socket", slack, store_url, app_token=True)
    with BotProcess(socket_config, tmp_path / "serve-socket.log") as socket_bot:
        wait_until(
            lambda: slack.calls_to("apps.connections.open"), TIMEOUT, "Socket Mode's connection attempt"
        )
        time.sleep(1.0)  # a while for whatever it logs after the attempt: nothing in particular is awaited
    outputs["serve in Socket Mode"] = socket_bot.log_text()

    leaks.search("serve's output", served)
    for where, text in outputs.items():
        leaks.search(where, text)
    for call in slack.calls:
        leaks.search(f"Slack {call.method} parameters", json.dumps(call.params))
        if call.token not in (None, BOT_TOKEN, APP_TOKEN):
            leaks.search(f"the token of Slack {call.method}", call.token)
    for response in slack.responses:
        leaks.search("a response_url answer", json.dumps(response))
    for upload in slack.uploads:
        leaks.search("an upload", json.dumps(upload, default=str))
    assert leaks.found == []
    # The search can find: the secrets were in use, where they belong.
    assert {call.token for call in slack.calls} >= {BOT_TOKEN, APP_TOKEN}


def _at_port(url: str, port: int) -> str:
    head, _, tail = url.rpartition(":")
    return f"{head}:{port}/{tail.split('/', 1)[1]}"


def _posted_texts(slack: FakeSlack) -> str:
    return "\n".join(m.text for m in slack.messages.values())
