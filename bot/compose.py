"""Assemble the running bot from its settings: store, cluster readers, Slack, the workers, the app.

`Bot` owns everything it opened and closes it; `proxybot serve` and `proxybot demo` both run one.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace

from starlette.applications import Starlette

from bot.alerts.prom_enrich import PromEnricher
from bot.alerts.storm import StormPolicy
from bot.app import Deps, ReadinessCheck, Worker, create_app
from bot.clients.alertmanager import AlertmanagerClient
from bot.clients.kube import KubeReader
from bot.clients.prometheus import PrometheusClient
from bot.clients.slack import SlackClient, SlackError
from bot.delivery.worker import Delivery
from bot.digest.fleet import ContextCronJobs
from bot.digest.pool import digest_pool, warm_up
from bot.errors import ClusterError
from bot.inbound.slack import slack_routes_and_workers
from bot.live import LiveState
from bot.metrics import BotMetrics
from bot.store import Store, StoreError, open_store
from config.settings import Settings, replica_source
from handlers import alerts, commands, digest

log = logging.getLogger(__name__)

# How long the alert worker waits, between notifications, for in-flight requests to be answered.
REQUESTS_FIRST_SECONDS = 0.05


@dataclass
class Bot:
    """The bot's parts, built once; `app` serves them, `close()` releases them."""

    deps: Deps
    app: Starlette
    readers: list[KubeReader] = field(default_factory=list)
    prometheus: PromEnricher | None = None  # owns the Prometheus client the digest shares
    commands: commands.CommandDeps | None = None
    silences: AlertmanagerClient | None = None
    pool: ProcessPoolExecutor | None = None  # the digest's worker processes

    async def close(self) -> None:
        if self.pool is not None:
            await asyncio.to_thread(self.pool.shutdown)
        if self.prometheus is not None:
            await self.prometheus.aclose()
        if self.commands is not None:
            await self.commands.aclose()
        if self.silences is not None:
            await self.silences.aclose()
        for reader in self.readers:
            await reader.close()
        await self.deps.store.close()


async def connect_readers(settings: Settings) -> dict[str, KubeReader]:
    """Live-state sources: one reader per client cluster and per addressable replica (`replicas`).

    A source whose kubeconfig fails is logged and left out (its alerts are posted without live state).
    """
    readers: dict[str, KubeReader] = {}
    for cluster in settings.clusters:
        contexts = {cluster.name: cluster.context}
        contexts.update({replica_source(cluster.name, pod): ctx for pod, ctx in cluster.replicas.items()})
        for source, context in contexts.items():
            try:
                readers[source] = await KubeReader.connect(source, cluster.kubeconfig, context)
            except ClusterError as err:
                log.error("%s (alerts for it are posted without live state)", err)
    return readers


def storm_policy(settings: Settings) -> StormPolicy:
    return StormPolicy(
        groups=settings.storm.groups,
        window_seconds=settings.storm.window_seconds,
        quiet_seconds=settings.storm.quiet_seconds,
    )


def store_readiness(store: Store) -> ReadinessCheck:
    async def store_ready() -> str | None:
        try:
            await store.depth()
        except StoreError as err:
            return f"store: {err}"
        return None

    return store_ready


def slack_readiness(slack: SlackClient) -> ReadinessCheck:
    async def slack_ready() -> str | None:
        try:
            await slack.auth_test()
        except SlackError as err:
            return f"Slack auth.test failed: {err}"
        return None

    return slack_ready


async def build_bot(settings: Settings, store: Store | None = None, *, warm_interval: float = 60.0) -> Bot:
    """Everything `serve` runs, from the settings alone.

    `warm_interval`: how often every cluster is read in the background, so alerts get windowed counts.
    """
    store = store or await open_store(settings.store.url.get_secret_value())
    readers = await connect_readers(settings)
    metrics = BotMetrics()
    live = LiveState(
        readers, timeout=settings.enrichment.timeout_seconds, observe=metrics.enrichment_seconds.observe
    )
    slack = SlackClient.from_settings(settings.slack)
    slack.observe = lambda method, outcome: metrics.slack_calls.labels(method, outcome).inc()
    readiness = [store_readiness(store), slack_readiness(slack)]
    deps = Deps(settings=settings, store=store, metrics=metrics, readiness=readiness)
    delivery = Delivery(store, slack)
    budget = settings.enrichment.timeout_seconds
    prom_client = (
        PrometheusClient(str(settings.prometheus.url), timeout=budget) if settings.prometheus.url else None
    )
    enricher = PromEnricher(prom_client, timeout=budget) if prom_client else None
    alert_worker = alerts.register(
        settings,
        store,
        delivery,
        live,
        wake=deps.wake,
        storm=storm_policy(settings),
        prometheus=enricher,
        pause=lambda: deps.activity.quiet(REQUESTS_FIRST_SECONDS),
    )
    silences = AlertmanagerClient.from_settings(settings.alertmanager) if settings.alertmanager.url else None
    command_deps = replace(
        commands.CommandDeps.for_settings(settings, silences=silences),
        observe=lambda sub, seconds: metrics.command_seconds.labels(sub).observe(seconds),
    )
    pool = digest_pool()
    digests = digest.register(
        settings,
        store,
        delivery,
        live.read,
        cronjobs=ContextCronJobs(command_deps.ctx),
        prometheus=prom_client,
        pages={c.name: readers[c.name] for c in settings.clusters if c.name in readers},
        executor=pool,
    )
    command_deps = replace(command_deps, digest=digests.runner.post_now)
    workers: list[Worker] = [
        lambda: warm_up(pool),  # the digest's worker processes start with the bot, not at 08:00
        alert_worker.run,
        delivery.run,
        digests.run,
        lambda: live.keep_warm(warm_interval),
    ]
    routes, slack_workers = slack_routes_and_workers(
        settings,
        deps,
        checks=commands.button_checks(command_deps),
        silencer=silences,
        registrations=[lambda app: commands.register(app, command_deps)],
    )
    app = create_app(deps, [*workers, *slack_workers], extra=routes)
    return Bot(deps, app, list(readers.values()), enricher, command_deps, silences, pool)
