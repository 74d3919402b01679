"""The store cannot write while webhooks arrive and a Slack post is in flight; then it can again.

Injected on the real `proxybot serve` process, through the store itself (no wrapper, no mock):
- SQLite, disk full: `serve` runs in a private mount namespace (`unshare`) whose store directory is a 4 MiB
  tmpfs; the test fills it to the last byte through `/proc/PID/root` and frees it afterwards. Every write
  then fails with SQLite's "database or disk is full", reads go on.
- PostgreSQL, read-only: the database is set `default_transaction_read_only` and the bot's sessions are
  ended, as a failover onto a standby does; the reconnected pool reads but cannot write. Healing resets the
  setting and ends the sessions again.
What must hold: a webhook meanwhile answers 503 with Retry-After, never 2xx, and is not stored; `/readyz`
answers 503 naming the store; the process stays up; once writes work the bot recovers by itself (`/readyz`
200 with no webhook needed); the webhook sent again is accepted and delivered; the post that was in flight
when the store failed is in Slack once; nothing is left pending or failed.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
import psycopg
import pytest
import yaml
from psycopg import sql

from sim.postgres import PostgresServer
from sim.server import SimServer
from sim.slack_api import FakeSlack
from tests.e2e.replicas import PgStoreView
from tests.e2e.stack import BotProcess, StoreQueries, StoreView
from tests.fakes import postgres
from tests.faults import upstream_faults
from tests.faults.upstream_faults import FAULTY, HEALTHY, fault_config, message_about, post_alert
from tests.waiting import wait_until

two_clusters = upstream_faults.two_clusters
fault_slack = upstream_faults.fault_slack
postgres_server = postgres.postgres_server

TMPFS_SIZE = "4m"
SLACK_LATENCY = 2.0  # holds the post in flight while the store fails under it
RECOVERY = 20.0


class StoreFault(Protocol):
    view: StoreQueries
    words: str  # what the store says while it cannot write

    def break_writes(self) -> None: ...

    def heal(self) -> None: ...


@dataclass
class FullDisk:
    """The bot's SQLite directory, a tmpfs in the bot's own mount namespace, filled to the last byte."""

    directory: Path  # as the bot sees it
    bot: BotProcess
    words: str = "database or disk is full"

    @property
    def _inside(self) -> Path:
        return Path(f"/proc/{self.bot.pid}/root") / self.directory.relative_to("/")

    @property
    def view(self) -> StoreQueries:
        return CopiedStoreView(self._inside / "bot.db")

    def break_writes(self) -> None:
        for n, chunk in enumerate((1 << 16, 512, 1)):  # large, then the last few bytes
            fd = os.open(self._inside / f"filler-{n}", os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while _wrote(fd, chunk):
                    pass
            finally:
                os.close(fd)

    def heal(self) -> None:
        for filler in self._inside.glob("filler-*"):
            filler.unlink()


class CopiedStoreView(StoreView):
    """Queries of a copy of the database and its WAL: SQLite resolves `/proc/PID/root` (a symlink to the
    other namespace's root) to our own `/`, so the file cannot be opened where it is. The copy holds every
    transaction committed by then (a torn last frame of the WAL is ignored, as after a crash)."""

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        with tempfile.TemporaryDirectory(prefix="proxybot-store-copy-") as directory:
            copy = Path(directory) / "bot.db"
            shutil.copyfile(self.db, copy)
            wal = self.db.with_name(self.db.name + "-wal")
            if wal.exists():
                shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
            return StoreView(copy)._rows(sql)


@dataclass
class ReadOnlyDatabase:
    """The bot's PostgreSQL database turned read-only under it, as after a failover onto a standby."""

    admin_url: str  # the server's own database: ours turns read-only for every new session, ours too
    database: str
    view: StoreQueries
    words: str = "read-only transaction"

    def break_writes(self) -> None:
        self._set("on")

    def heal(self) -> None:
        self._set("off")

    def _set(self, value: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
            setting = sql.SQL("ALTER DATABASE {} SET default_transaction_read_only = {}")
            conn.execute(setting.format(sql.Identifier(self.database), sql.SQL(value)))
            # Sessions keep the setting they started with: the bot's must start again to see the change.
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (self.database,)
            )


def _wrote(fd: int, size: int) -> bool:
    """Whether `size` more bytes fit (unbuffered: nothing is left to flush on a full disk)."""
    try:
        return os.write(fd, b"\0" * size) > 0
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        return False


def in_own_mount_namespace(directory: Path) -> list[str]:
    """`python -m bot` in a private mount namespace whose `directory` is a small tmpfs (gone with it)."""
    mount = f'mount -t tmpfs -o size={TMPFS_SIZE} proxybot-store "$0" && exec "$@"'
    namespace = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]
    return [*namespace, "sh", "-c", mount, str(directory), sys.executable, "-m", "bot"]


@pytest.fixture(params=["sqlite-disk-full", "postgresql-read-only"])
def faulty_store(
    request: pytest.FixtureRequest, two_clusters: SimServer, fault_slack: FakeSlack, tmp_path: Path
) -> Iterator[tuple[BotProcess, StoreFault]]:
    config = fault_config(two_clusters, tmp_path, fault_slack)
    doc = yaml.safe_load(config.read_text())
    fault: StoreFault
    if request.param == "sqlite-disk-full":
        directory = tmp_path / "store"
        directory.mkdir()
        doc["store"] = {"url": f"sqlite:///{directory / 'bot.db'}"}
        config.write_text(yaml.safe_dump(doc, sort_keys=False))
        bot = BotProcess(config, tmp_path / "bot.log", command=in_own_mount_namespace(directory))
        fault = FullDisk(directory, bot)
    else:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        url = asyncio.run(server.new_database())
        doc["store"] = {"url": url}
        config.write_text(yaml.safe_dump(doc, sort_keys=False))
        bot = BotProcess(config, tmp_path / "bot.log")
        fault = ReadOnlyDatabase(server.url, url.rsplit("/", 1)[1], PgStoreView(url))
    try:
        yield bot.start(), fault
    finally:
        bot.kill()


def readyz(bot: BotProcess) -> httpx.Response:
    return httpx.get(f"{bot.url}/readyz", timeout=10.0)


def refused_503(bot: BotProcess) -> float:
    text = httpx.get(f"{bot.url}/metrics", timeout=5.0).text
    line = 'proxybot_notifications_refused_total{status="503"} '
    return sum(float(x.split()[-1]) for x in text.splitlines() if x.startswith(line))


def test_a_store_that_cannot_write_refuses_with_503_and_recovers_by_itself(
    faulty_store: tuple[BotProcess, StoreFault], fault_slack: FakeSlack
) -> None:
    bot, fault = faulty_store
    slack = fault_slack
    assert post_alert(bot, HEALTHY).status_code == 202
    message_about(slack, HEALTHY)

    # team-b's post is in flight (Slack is slow) when the store stops taking writes.
    slack.latency = SLACK_LATENCY
    assert post_alert(bot, FAULTY).status_code == 202
    wait_until(lambda: _posting(slack, "platform/crd-store-b"), 20.0, "team-b's post to reach Slack")
    fault.break_writes()
    try:
        refused = post_alert(bot, FAULTY, alertname="ResourceProxyPeerCacheUnsynced")
        assert refused.status_code == 503, refused.text
        assert refused.headers["Retry-After"] == "1"
        ready = readyz(bot)
        assert ready.status_code == 503
        assert any(fault.words in p and p.startswith("store: ") for p in ready.json()["problems"]), ready.text
        assert httpx.get(f"{bot.url}/healthz", timeout=5.0).status_code == 200
        assert refused_503(bot) >= 1
        # The post returns; recording it fails; the workers retry.
        wait_until(
            lambda: "delivery: the store failed" in bot.log_text(),
            SLACK_LATENCY + 20.0,
            "recording the post in flight to fail",
        )
        assert bot.running
    finally:
        slack.latency = 0.0
        fault.heal()

    wait_until(lambda: readyz(bot).status_code == 200, RECOVERY, "/readyz to recover with no webhook")
    assert fault.view.notifications() == 2  # the refused one was not stored
    assert post_alert(bot, FAULTY, alertname="ResourceProxyPeerCacheUnsynced").status_code == 202
    message_about(slack, FAULTY, alertname="ResourceProxyPeerCacheUnsynced", timeout=RECOVERY)
    view = fault.view
    wait_until(lambda: view.unprocessed() == 0 and view.outbox_pending() == 0, RECOVERY, "a drained store")
    # Each group once: the post that was in flight when the store failed was not made twice.
    message_about(slack, FAULTY, alertname="ResourceProxyNoHealthyPeers")
    message_about(slack, HEALTHY)
    assert (view.notifications(), view.outbox_failed()) == (3, 0)
    assert bot.running
    log = bot.log_text()
    assert fault.words in log
    assert "delivery: the store failed" in log  # recording the post in flight did fail
    assert "Traceback" not in log


def _posting(slack: FakeSlack, target: str) -> bool:
    return any(target in str(call.params.get("text", "")) for call in slack.calls_to("chat.postMessage"))
