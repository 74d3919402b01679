"""The running stack of the end-to-end tests: `proxybot serve` as a real process, its config, webhook bodies.

`BotProcess` starts the bot exactly as an operator does (`proxybot serve --config F`) against the simulator
and the fake Slack, waits for `/healthz`, and can be stopped (SIGTERM) or killed (SIGKILL). `StoreView`
reads the bot's SQLite file read-only, to prove what was accepted was also processed (`StoreQueries` are
those questions, asked of PostgreSQL too by tests/e2e/replicas.py). The webhook builders
make version-4 bodies shaped like Alertmanager 0.25's (see tests/bot/domain/alertmanager_samples.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import ssl
import subprocess
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

import httpx
import yaml

from bot.render.slack import ACTION_ACK, ACTION_UNACK, ACTIONS_BLOCK_ID
from sim.ports import free_port
from sim.server import SimServer
from sim.slack_api import FakeSlack, Message, iter_texts
from tests.fakes import slack_requests
from tests.harness.process import HarnessError, find_binary
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
BOT_TOKEN = "xoxb-e2e-bot-token"
WEBHOOK_TOKEN = "e2e-webhook-token-4f1c9a"
SIGNING_SECRET = "e2e-signing-secret-8d2b"
CHANNEL = "#alerts"
CLIENT = "team-a"
TARGET = "platform/crd-store"
GO_ZERO_TIME = "0001-01-01T00:00:00Z"
Json = dict[str, Any]


def write_bot_config(
    sim: SimServer, workdir: Path, slack_api_url: str, db: Path | None = None, *, refresh: int | None = None
) -> Path:
    """The simulator's proxybot config plus Slack, Alertmanager and store sections for a test bot; with
    `refresh`, the platform read that often (seconds; the simulator plays the platform)."""
    path = sim.write_config(workdir / "proxybot.yaml")
    doc = yaml.safe_load(path.read_text())
    if refresh is not None:
        doc["platform"]["refresh"] = refresh
    doc["slack"] = {
        "bot_token": BOT_TOKEN,
        "signing_secret": SIGNING_SECRET,
        "api_url": slack_api_url,
        "default_channel": CHANNEL,
    }
    # Nothing in these tests calls Alertmanager (no Silence button is pressed); the URL only has to parse.
    doc["alertmanager"] = {"url": "http://127.0.0.1:9", "webhook_token": WEBHOOK_TOKEN}
    doc["store"] = {"url": f"sqlite:///{db or workdir / 'bot.db'}"}
    # No scheduled digest: started within an hour after a fire time (08:00 on weekdays by default), the
    # bot catches the missed digest up and posts it, which these tests would count as an alert's post.
    doc["digest"] = {"enabled": False}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def proxybot_command() -> list[str]:
    """The installed console script: the operator's entry point, not an import of its internals."""
    return [find_binary("proxybot", str(Path(sys.executable).parent / "proxybot"))]


class BotProcess:
    """`proxybot serve` on a free loopback port, logging to a file; a context manager that always ends it."""

    def __init__(
        self,
        config: Path,
        log_path: Path,
        *,
        port: int | None = None,
        command: Sequence[str] | None = None,
    ) -> None:
        self.config = config
        self.log_path = log_path
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._command = list(command) if command is not None else [sys.executable, "-m", "bot"]
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self, ready_timeout: float = 30.0) -> Self:
        argv = [*self._command, "serve", "--config", str(self.config), "--host", "127.0.0.1"]
        argv += ["--port", str(self.port)]
        # The tests' own environment must not reach the bot's config through the PROXYBOT_* overrides.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYBOT_")}
        env["PYTHONUNBUFFERED"] = "1"
        self._log = self.log_path.open("ab")
        self._process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            wait_until(self._healthy, ready_timeout, f"proxybot serve on {self.url}", interval=0.05)
        except BaseException:
            self.kill()
            raise
        return self

    def _healthy(self) -> bool | None:
        assert self._process is not None
        code = self._process.poll()
        if code is not None:
            raise HarnessError(f"proxybot serve exited with {code}:\n{self.log_tail()}")
        try:
            return httpx.get(f"{self.url}/healthz", timeout=2.0).status_code == httpx.codes.OK or None
        except httpx.TransportError:
            return None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, exactly like a crash or an OOM kill."""
        self._end(signal.SIGKILL)

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int | None:
        """SIGTERM (or SIGINT, as Ctrl-C) for a clean shutdown; SIGKILL if it does not exit within 10 s.

        Returns the exit status (negative: killed by that signal), None when it was not running.
        """
        return self._end(sig)

    def _end(self, sig: signal.Signals) -> int | None:
        process, self._process = self._process, None
        code = None
        if process is not None:
            if process.poll() is None:
                process.send_signal(sig)
            try:
                code = process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None
        return code

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def metric(self, name: str) -> float:
        """One unlabelled sample of the bot's own `/metrics`."""
        text = httpx.get(f"{self.url}/metrics", timeout=5.0).text
        for line in text.splitlines():
            if line.startswith(f"{name} "):
                return float(line.split()[1])
        raise HarnessError(f"{name} is not in the bot's /metrics")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.kill()


class StoreQueries(ABC):
    """What the tests ask of a bot's store, over one query method each backend's view provides."""

    @abstractmethod
    def _rows(self, sql: str) -> list[tuple[Any, ...]]: ...

    def _one(self, sql: str) -> int:
        return int(self._rows(sql)[0][0])

    def notifications(self) -> int:
        return self._one("SELECT count(*) FROM notifications")

    def processing_span(self) -> float:
        """Seconds from the first notification processed to the last (0 before two were)."""
        rows = self._rows("SELECT min(processed_at), max(processed_at) FROM notifications")
        first, last = rows[0] if rows else (None, None)
        return 0.0 if first is None or last is None else float(last) - float(first)

    def unprocessed(self) -> int:
        return self._one("SELECT count(*) FROM notifications WHERE processed_at IS NULL")

    def first_received_at(self) -> float | None:
        """When the first notification was accepted (the bot's wall clock), if any was."""
        found = self._rows("SELECT min(received_at) FROM notifications")[0][0]
        return None if found is None else float(found)

    def last_received_at(self) -> float | None:
        """When the last notification was accepted (wall-clock seconds), None before any."""
        rows = self._rows("SELECT max(received_at) FROM notifications")
        return None if not rows or rows[0][0] is None else float(rows[0][0])

    def outbox_pending(self) -> int:
        return self._one("SELECT count(*) FROM outbox WHERE state = 'pending'")

    def outbox_failed(self) -> int:
        return self._one("SELECT count(*) FROM outbox WHERE state = 'failed'")

    def escalations(self) -> list[tuple[str, str | None, float]]:
        """(group key, outcome or None while pending, due at) of every escalation deadline, by deadline."""
        rows = self._rows("SELECT group_key, outcome, due_at FROM escalations ORDER BY due_at")
        return [(str(k), None if outcome is None else str(outcome), float(due)) for k, outcome, due in rows]

    def verifications(self) -> list[tuple[str, str | None, float]]:
        """(group key, outcome or None while pending, due at) of every verification, by due time."""
        rows = self._rows("SELECT group_key, outcome, due_at FROM verifications ORDER BY due_at")
        return [(str(k), None if outcome is None else str(outcome), float(due)) for k, outcome, due in rows]

    def storm_entries(self) -> dict[str, list[Any]]:
        """The alerts each group contributed to the storms on record (group key -> entries)."""
        rows = self._rows("SELECT details FROM alert_groups WHERE group_key LIKE 'storm:%'")
        entries: dict[str, list[Any]] = {}
        for (details,) in rows:
            entries.update(json.loads(details).get("entries", {}))
        return entries


class StoreView(StoreQueries):
    """Read-only queries of the bot's SQLite store (WAL lets us read while the bot writes)."""

    def __init__(self, db: Path) -> None:
        self.db = db

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5.0)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()


def text_of(message: Message) -> str:
    """A Slack message's fallback text and every text of its blocks."""
    return "\n".join([message.text, *iter_texts(message.blocks)])


def messages_about(slack: FakeSlack, target: str, channel: str = CHANNEL) -> list[Message]:
    """The top-level messages in `channel` that name `target` (an alert group's message names it)."""
    return [m for m in slack.top_level(channel) if target in m.text]


def healthy_peers(sim: SimServer, cluster: str = CLIENT) -> list[float]:
    """The simulator's `vcluster_proxy_peers{state="healthy"}` values, read like the bot reads them."""
    url = sim.cluster_url(cluster) + "/metrics/syncer"
    headers = {"Authorization": f"Bearer {sim.token}"}
    trust = ssl.create_default_context(cafile=str(sim.ca_path))
    text = httpx.get(url, headers=headers, verify=trust, timeout=5.0).text
    return [
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("vcluster_proxy_peers{") and 'state="healthy"' in line
    ]


def wait_degraded(sim: SimServer, timeout: float = 30.0) -> None:
    """Until the scenario's fault shows: no group/version of the client has a healthy peer."""
    wait_until(lambda: (values := healthy_peers(sim)) and not any(values), timeout, "the target to degrade")


# -- webhook bodies ------------------------------------------------------------------------------------


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def fingerprint(labels: Mapping[str, str]) -> str:
    """A stable 16-hex-digit fingerprint of a label set, like Alertmanager's."""
    return hashlib.sha256(json.dumps(sorted(labels.items())).encode()).hexdigest()[:16]


def proxy_alert(
    alertname: str = "ResourceProxyNoHealthyPeers",
    *,
    target: str = TARGET,
    cluster: str | None = CLIENT,
    group_version: str = "example.com/v1",
    pod: str | None = None,
    severity: str = "critical",
) -> dict[str, str]:
    """The labels of one of the guide's alerts as Prometheus would send them."""
    labels = {"alertname": alertname, "target": target, "group_version": group_version, "severity": severity}
    if cluster is not None:
        labels["cluster"] = cluster
    if pod is not None:
        labels["pod"] = pod
    return labels


def summary_of(labels: Mapping[str, str]) -> str:
    where = f"{labels.get('target')} ({labels.get('group_version')})"
    return f"Resource proxy target {where}: no fully healthy peers"


def alert_entry(labels: Mapping[str, str], starts_at: datetime, ends_at: datetime | None = None) -> Json:
    """One alert of a v4 body; resolved when `ends_at` is given."""
    return {
        "status": "firing" if ends_at is None else "resolved",
        "labels": dict(labels),
        "annotations": {"summary": summary_of(labels)},
        "startsAt": rfc3339(starts_at),
        "endsAt": GO_ZERO_TIME if ends_at is None else rfc3339(ends_at),
        "generatorURL": "http://prometheus.invalid/graph?g0.expr=vcluster_proxy_peers",
        "fingerprint": fingerprint(labels),
    }


def group_key(group_labels: Mapping[str, str]) -> str:
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(group_labels.items()))
    return "{}:{" + inner + "}"


def notification(
    alerts: Sequence[Json], group_by: Sequence[str] = ("alertname", "cluster", "target"), truncated: int = 0
) -> Json:
    """A v4 notification of one group (the group's labels are taken from its first alert)."""
    first = alerts[0]["labels"]
    group_labels = {k: first[k] for k in group_by if k in first}
    common = {k: v for k, v in first.items() if all(a["labels"].get(k) == v for a in alerts)}
    firing = any(a["status"] == "firing" for a in alerts)
    return {
        "receiver": "proxybot",
        "status": "firing" if firing else "resolved",
        "alerts": list(alerts),
        "groupLabels": group_labels,
        "commonLabels": common,
        "commonAnnotations": {},
        "externalURL": "http://alertmanager.invalid:9093",
        "version": "4",
        "groupKey": group_key(group_labels),
        "truncatedAlerts": truncated,
    }


def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {WEBHOOK_TOKEN}"}


def now() -> datetime:
    return datetime.now(UTC)


# -- buttons, pressed as Slack presses them -----------------------------------------------------------

ALICE, BOB = "U0ALICE01", "U0BOB0001"
ACK_ACTIONS = (ACTION_ACK, ACTION_UNACK)


def buttons(message: Message) -> list[dict[str, Any]]:
    """The buttons of an alert message's actions block."""
    block = next(b for b in message.blocks if b.get("block_id") == ACTIONS_BLOCK_ID)
    return list(block["elements"])


def press_button(
    bot: BotProcess, slack: FakeSlack, message: Message, action_id: str, user: str, key: str
) -> None:
    """A signed press of the acknowledge buttons on `message`, as a client showing it presses it (either
    button carries the message's reference), sent to `bot`; answers go to `slack.response_url(key)`."""
    [button] = [b for b in buttons(message) if b["action_id"] in ACK_ACTIONS]
    body = slack_requests.button_body(
        action_id,
        button["value"],
        slack.response_url(key),
        user=user,
        user_name="alice" if user == ALICE else "bob",
        channel=message.channel,
        channel_name=CHANNEL.removeprefix("#"),
        message_ts=message.ts,
    )
    headers = slack_requests.signed(body, secret=SIGNING_SECRET)
    answer = httpx.post(f"{bot.url}/slack/events", content=body, headers=headers, timeout=10.0)
    assert (answer.status_code, answer.text) == (200, ""), "every press is acked at once, with an empty body"
