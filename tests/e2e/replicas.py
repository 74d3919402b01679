"""Several `proxybot serve` replicas on one PostgreSQL database, fed by a real Alertmanager HA pair.

Replicas           `proxybot serve` processes on one config, each on a port of its own that it keeps
                   across a restart (as a pod keeps its Service), started together; who holds the lease
PeeredAlertmanager Debian's Alertmanager clustered with its peers (gossip on loopback), delivering every
                   notification to every replica (one webhook_config per replica)
PgStoreView        read-only queries of the shared store, as `StoreView` does for SQLite
replica_config     the e2e bot config on a PostgreSQL store
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import yaml

from sim.ports import free_port
from sim.server import SimServer
from tests.e2e.stack import BotProcess, StoreQueries, write_bot_config
from tests.harness.alertmanager import Alertmanager, Route
from tests.waiting import WaitTimeout, wait_until

LEADER = "leader"  # bot.lease.LEADER: the lease whose holder processes alerts and sends to Slack
PG_CONNECT_TIMEOUT = 10  # seconds, libpq's connect_timeout
CLUSTER_SETTLE_TIMEOUT = 30.0


def replica_config(
    sim: SimServer, workdir: Path, slack_api_url: str, store_url: str, **sections: Mapping[str, Any]
) -> Path:
    """The e2e config (`write_bot_config`) on the PostgreSQL store `store_url`; each of `sections`
    (e.g. `digest={...}`) replaces that section."""
    path = write_bot_config(sim, workdir, slack_api_url)
    doc = yaml.safe_load(path.read_text())
    doc["store"] = {"url": store_url}
    doc.update({name: dict(section) for name, section in sections.items()})
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


class Replicas:
    """`count` replicas of `proxybot serve` on one config and `store`; `close()` kills every one."""

    def __init__(
        self, config: Path, workdir: Path, store: PgStoreView, count: int = 2, name: str = "replica"
    ) -> None:
        self.store = store
        self.bots = [BotProcess(config, workdir / f"{name}-{i}.log", port=free_port()) for i in range(count)]

    def start(self) -> None:
        """Start every replica that is not running, all at once (as a Deployment's pods start)."""
        stopped = [bot for bot in self.bots if not bot.running]
        with ThreadPoolExecutor(max_workers=max(1, len(stopped))) as pool:
            for started in pool.map(lambda bot: bot.start(), stopped):
                assert started.running
        self.leader()  # one of them leads before anything is asked of them

    def webhook_urls(self) -> list[str]:
        return [f"{bot.url}/alertmanager" for bot in self.bots]

    def running(self) -> list[BotProcess]:
        return [bot for bot in self.bots if bot.running]

    def leader(self, timeout: float = 30.0) -> BotProcess:
        """The running replica that holds the leader lease (waits until one does)."""
        found: list[BotProcess] = []

        def holder() -> bool:
            pid = self.store.leader_pid()
            found[:] = [bot for bot in self.running() if bot.pid == pid]
            return bool(found)

        wait_until(holder, timeout, "a running replica to hold the leader lease", interval=0.2)
        return found[0]

    def others(self, bot: BotProcess) -> list[BotProcess]:
        return [other for other in self.running() if other is not bot]

    def logs(self) -> str:
        """Every replica's log tail, for an assertion message."""
        return "\n".join(f"--- {bot.log_path.name}\n{bot.log_tail(20)}" for bot in self.bots)

    def wait(self, check: Callable[[], object], timeout: float, what: str) -> None:
        """`wait_until`, failing with every replica's log tail as it is when the wait gives up."""
        try:
            wait_until(check, timeout, what)
        except WaitTimeout as error:
            raise WaitTimeout(f"{error}\n{self.logs()}") from None

    def close(self) -> None:
        for bot in self.bots:
            bot.kill()


def accepted(bot: BotProcess) -> float:
    """Notifications the replica accepted (new or duplicate), from its `/metrics`."""
    text = httpx.get(f"{bot.url}/metrics", timeout=5.0).text
    prefix = "proxybot_notifications_accepted_total{"
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))


class PgStoreView(StoreQueries):
    """Read-only queries of a PostgreSQL store, with what several replicas add: the lease, digest runs."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, connect_timeout=PG_CONNECT_TIMEOUT, autocommit=True) as conn:
            # Without parameters the text goes as written (a `%` in LIKE is not a placeholder then).
            return conn.execute(sql.encode(), params or None).fetchall()

    def leader_pid(self) -> int | None:
        """The pid in the owner of the live leader lease (owner: `host:pid:random`), or None."""
        rows = self._rows("SELECT owner FROM leases WHERE name = %s AND until > %s", (LEADER, time.time()))
        return int(str(rows[0][0]).split(":")[1]) if rows else None

    def duplicates(self) -> int:
        """Deliveries that repeated a notification already stored (another peer's, another replica's)."""
        return self._one("SELECT coalesce(sum(duplicates), 0) FROM notifications")

    def posted_digests(self) -> list[str]:
        """The scheduled digest periods recorded as posted, in order."""
        rows = self._rows(
            "SELECT period FROM digest_runs WHERE state = 'posted' AND period NOT LIKE %s ORDER BY period",
            ("manual:%",),
        )
        return [str(period) for (period,) in rows]

    def digest_claimers(self) -> dict[str, str]:
        """Period -> the owner that claimed it."""
        rows = self._rows("SELECT period, claimed_by FROM digest_runs")
        return {str(period): str(owner) for period, owner in rows}

    def pending_posts(self) -> list[tuple[str, int]]:
        """(key, attempts) of every top-level post still waiting to go out."""
        rows = self._rows("SELECT key, attempts FROM outbox WHERE kind = 'post' AND state = 'pending'")
        return [(str(key), int(attempts)) for key, attempts in rows]

    def post_results(self, like: str) -> dict[str, dict[str, Any]]:
        """Outbox key -> Slack's recorded answer, of the done posts whose key matches `like`."""
        rows = self._rows(
            "SELECT key, result FROM outbox WHERE kind = 'post' AND state = 'done' AND key LIKE %s", (like,)
        )
        return {str(key): json.loads(result) for key, result in rows if result}


class PeeredAlertmanager(Alertmanager):
    """An Alertmanager in an HA cluster (gossip on `cluster_port`, joining `peer_ports`), with one webhook
    receiver per URL: as a Prometheus-fed pair that reaches every proxybot pod."""

    def __init__(
        self,
        workdir: Path,
        webhook_urls: Sequence[str],
        bearer_token: str,
        *,
        route: Route,
        cluster_port: int,
        peer_ports: Sequence[int],
    ) -> None:
        self.cluster_port = cluster_port
        self.peer_ports = list(peer_ports)
        super().__init__(workdir, webhook_urls[0], bearer_token, route=route)
        config = yaml.safe_load(self.config_path.read_text())
        [receiver] = config["receivers"]
        [hook] = receiver["webhook_configs"]
        receiver["webhook_configs"] = [{**hook, "url": url} for url in webhook_urls]
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))

    def _argv(self) -> list[str]:
        argv = [arg for arg in super()._argv() if not arg.startswith("--cluster.")]
        argv += [
            f"--cluster.listen-address=127.0.0.1:{self.cluster_port}",
            *(f"--cluster.peer=127.0.0.1:{port}" for port in self.peer_ports),
            # Seconds, not the defaults' minutes: a peer waits 1 s per position for the other's
            # notification before it sends its own, and state is gossiped and synced within a second.
            "--cluster.peer-timeout=1s",
            "--cluster.settle-timeout=2s",
            "--cluster.gossip-interval=50ms",
            "--cluster.pushpull-interval=1s",
            "--cluster.probe-interval=200ms",
            "--cluster.reconnect-interval=1s",
        ]
        return argv

    def peers(self) -> int:
        """How many members this Alertmanager's cluster has (itself included)."""
        cluster = self.status().get("cluster") or {}
        return len(cluster.get("peers") or [])


@contextmanager
def alertmanager_pair(
    workdir: Path, webhook_urls: Sequence[str], bearer_token: str, route: Route, size: int = 2
) -> Iterator[list[PeeredAlertmanager]]:
    """`size` clustered Alertmanagers, each delivering to every URL; yielded once they see each other."""
    ports = [free_port() for _ in range(size)]
    with ExitStack() as stack:
        members = []
        for i, port in enumerate(ports):
            home = workdir / f"alertmanager-{i}"
            home.mkdir()
            peers = [other for other in ports if other != port]
            am = PeeredAlertmanager(
                home, webhook_urls, bearer_token, route=route, cluster_port=port, peer_ports=peers
            )
            members.append(stack.enter_context(am))
        try:
            wait_until(
                lambda: all(am.peers() == size for am in members),
                CLUSTER_SETTLE_TIMEOUT,
                f"the {size} Alertmanagers to form one cluster",
                interval=0.2,
            )
        except WaitTimeout as error:
            tails = "\n".join(am.log_tail() for am in members)
            raise WaitTimeout(f"{error}\n{tails}") from None
        yield members


def post_to_all(pair: Sequence[Alertmanager], alerts: Sequence[Mapping[str, Any]]) -> None:
    """Push alerts to every Alertmanager of the pair, as Prometheus does (it sends to each)."""
    for am in pair:
        am.post_alerts(alerts)
