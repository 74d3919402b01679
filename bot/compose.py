"""The composition root: the running bot, built from its settings and its I/O clients.

    open_clients(settings)         -> Clients  store, cluster readers, Slack, Prometheus, Alertmanager, clock
    build_bot(settings, clients)   -> Bot      one LiveState, the workers, the app; `close()` releases all

Every client is opened once and shared: alerts, `/proxy`, the buttons and the digest read each cluster
(and each `cluster/pod` replica) through one reader and one `LiveState`, and Prometheus through one
client. `proxybot serve`, `proxybot demo`, the benchmarks and the tests all build through here; a test
swaps one client for a fake (`dataclasses.replace(clients, slack=fake)`) and every consumer gets it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from slack_sdk.web.async_client import AsyncWebClient
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from bot.alerts.change_enrich import ChangeHistory
from bot.alerts.escalation import EscalationWatch, configured
from bot.alerts.prom_enrich import PromEnricher
from bot.alerts.silenced_end import SilencedEnds
from bot.alerts.silences import SilenceWatch
from bot.alerts.stale_check import ActiveAlerts
from bot.alerts.storm import StormPolicy
from bot.alerts.verification import VerificationWatch
from bot.alerts.verification import configured as verified
from bot.app import Deps, ReadinessCheck, create_app
from bot.checks.recheck import recheck
from bot.checks.verify import open_prometheus
from bot.clients.alertmanager import AlertmanagerClient
from bot.clients.kube import KubeReader
from bot.clients.prometheus import PrometheusClient
from bot.clients.slack import SlackClient, SlackError
from bot.delivery.worker import Delivery, DeliveryPolicy, SlackSender
from bot.digest.fleet import ContextCronJobs, ContextTriage
from bot.digest.pool import digest_pool, warm_up
from bot.digest.runner import DigestRunner
from bot.errors import ClusterError
from bot.fleet.watch import FleetWatch
from bot.inbound.slack import Registration, slack_routes_and_workers
from bot.lease import Lease, lease_timings
from bot.live import LiveState, MetricsSource
from bot.metrics import BotMetrics
from bot.ports import Clock, Silences, ThreadReplies, ViewOpener, Worker
from bot.reads.context import CHECK_TIMEOUT, CheckContext, Unreadable, live_sources
from bot.reads.control_plane_logs import ControlPlaneLogReader
from bot.reads.triage import SharedTargetPods
from bot.silence_makers import MadeSilences
from bot.store import Store, StoreError, open_store
from config.settings import Settings
from handlers import actions, alerts, commands, digest
from handlers.acknowledge import Acknowledger
from handlers.actions import ActionDeps, ButtonChecks

log = logging.getLogger(__name__)

# How long the alert worker waits, between notifications, for in-flight requests to be answered.
REQUESTS_FIRST_SECONDS = 0.05
# On a store shared by replicas, how often the leader looks for notifications another replica accepted.
SHARED_STORE_POLL = 0.5


class ObservedSlack(SlackSender, Protocol):
    """Slack as the outbox uses it, telling (method, outcome) of every call to `observe`, and (method,
    error code) of every refusal to `refused`."""

    observe: Callable[[str, str], None]
    refused: Callable[[str, str], None]

    async def auth_test(self) -> Mapping[str, Any]: ...

    async def workspace_url(self) -> str | None: ...

    async def open_view(self, trigger_id: str, view: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True)
class Clients:
    """The bot's I/O clients; `close()` closes what `open_clients` opened, each once."""

    store: Store
    slack: ObservedSlack
    readers: Mapping[str, KubeReader]  # per live-state source: a cluster, or `cluster/pod`
    unreadable: Mapping[str, ClusterError] = field(default_factory=dict)  # sources that failed to open
    prometheus: PrometheusClient | None = None  # None: `prometheus.url` is not configured
    alertmanager: Silences | None = None  # None: `alertmanager.url` is not configured
    # The same Alertmanager, asked before a suspected stale copy is skipped (`bot.alerts.stale_check`).
    active_alerts: ActiveAlerts | None = None
    # What the bot tells the time by (the times its messages show, its reads stamped) and what it paces
    # its own work by (the store's stamps and due times, delivery, the lease, a storm's pauses), and the
    # intervals of its reads (caches, windows, a GET's time). All three are the machine's clocks, except in
    # the demo: there `clock` and `monotonic` are the simulated world's, which stop while a stop is held,
    # so what the bot says of a held world is the same on every machine, and `pacing` keeps running.
    clock: Clock = time.time
    pacing: Clock = time.time
    monotonic: Clock = time.monotonic
    # Shared by every copy `replace()` makes, so a client swapped out for a fake is still closed.
    opened: AsyncExitStack = field(default_factory=AsyncExitStack, repr=False, compare=False)

    async def close(self) -> None:
        await self.opened.aclose()


@dataclass(frozen=True)
class Clocks:
    """The three clocks of `Clients` (the machine's by default; the demo's are the simulated world's)."""

    clock: Clock = time.time
    pacing: Clock = time.time
    monotonic: Clock = time.monotonic


async def open_clients(settings: Settings, *, clocks: Clocks | None = None) -> Clients:
    """The real clients, from the settings: kubeconfigs loaded off the event loop, each once."""
    clocks = clocks or Clocks()
    slack = SlackClient.from_settings(settings.slack)  # first: a missing token fails before any I/O
    opened = AsyncExitStack()
    try:
        store = await open_store(settings.store.url.get_secret_value(), clock=clocks.pacing)
        opened.push_async_callback(store.close)
        readers, unreadable = await open_readers(settings, opened, timer=clocks.monotonic)
        # The checks' own timeout (as /proxy verify and reasons had); enrichment passes its budget per call.
        prometheus = open_prometheus(settings)
        if prometheus is not None:
            opened.push_async_callback(prometheus.aclose)
        alertmanager = _open_alertmanager(settings, opened)
    except BaseException:
        await opened.aclose()
        raise
    return Clients(
        store,
        slack,
        readers,
        unreadable,
        prometheus,
        alertmanager,
        alertmanager,
        clock=clocks.clock,
        pacing=clocks.pacing,
        monotonic=clocks.monotonic,
        opened=opened,
    )


def _open_alertmanager(settings: Settings, opened: AsyncExitStack) -> AlertmanagerClient | None:
    if settings.alertmanager.url is None:
        return None
    client = AlertmanagerClient.from_settings(settings.alertmanager)
    opened.push_async_callback(client.aclose)
    return client


async def open_readers(
    settings: Settings, opened: AsyncExitStack, *, timer: Clock = time.monotonic
) -> tuple[dict[str, KubeReader], dict[str, ClusterError]]:
    """One reader per live-state source, opened concurrently and closed with `opened`; a source that
    fails is logged and kept apart with its error (its reads say why). `timer` times each GET."""
    sources = live_sources(settings)
    connecting = (KubeReader.connect(s.name, s.kubeconfig, s.context, timer=timer) for s in sources)
    outcomes = await asyncio.gather(*connecting, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, KubeReader):
            opened.push_async_callback(outcome.close)
    readers: dict[str, KubeReader] = {}
    unreadable: dict[str, ClusterError] = {}
    for source, outcome in zip(sources, outcomes, strict=True):
        if isinstance(outcome, KubeReader):
            readers[source.name] = outcome
        elif isinstance(outcome, ClusterError):
            log.error("%s (its live state is unavailable)", outcome)
            unreadable[source.name] = outcome
        else:
            raise outcome
    return readers, unreadable


@dataclass
class Bot:
    """The bot's parts, built once over its clients; `app` serves them, `close()` releases them."""

    deps: Deps
    app: Starlette
    clients: Clients
    live: LiveState
    commands: commands.CommandDeps
    delivery: Delivery
    enricher: PromEnricher | None = None
    pool: ProcessPoolExecutor | None = None  # the worker processes: digest judging, alert charts
    digest_runner: DigestRunner | None = None  # its digests and fleet samples (the demo fills a past day)

    async def close(self) -> None:
        """Release everything; a step that fails does not keep the later ones (the clients) open."""
        try:
            if self.pool is not None:
                await asyncio.to_thread(self.pool.shutdown)
            if self.enricher is not None:
                await self.enricher.cancel_pending()  # its client is one of the clients, closed below
        finally:
            try:
                await self.commands.aclose()
            finally:
                await self.clients.close()


async def open_bot(
    settings: Settings,
    *,
    warm_interval: float | None = 60.0,
    clocks: Clocks | None = None,
    fleet: FleetWatch | None = None,
) -> Bot:
    """`build_bot` over real clients (`serve`, `demo`, the benchmarks); they are closed if it fails."""
    clients = await open_clients(settings, clocks=clocks)
    try:
        return build_bot(settings, clients, warm_interval=warm_interval, fleet=fleet)
    except BaseException:
        await clients.close()
        raise


def build_bot(
    settings: Settings,
    clients: Clients,
    *,
    warm_interval: float | None = 60.0,
    fleet: FleetWatch | None = None,
) -> Bot:
    """Everything `serve` runs, wired over `clients`; nothing runs until the app starts.

    `fleet`: the platform's fleet the settings' clusters come from, kept current (None: the configuration's).

    `warm_interval`: how often every cluster is read in the background, so alerts get windowed counts
    (None: never; the demo's held stops, whose windows would start wherever the machine's speed put them).
    """
    deps = _deps(settings, clients)
    if fleet is not None:
        deps.metrics.follow_fleet(fleet.health)
    live = shared_live_state(settings, clients, deps.metrics)
    # SQLite is one replica's store (the shipped variant runs one pod, `strategy: Recreate`): no lease, so
    # a restart after a crash starts at once instead of waiting out the dead process's lease.
    shared = clients.store.backend != "sqlite"
    lease = Lease(clients.store, ttl=lease_timings(settings).ttl, clock=clients.pacing) if shared else None
    policy = DeliveryPolicy(idle_poll=SHARED_STORE_POLL * 4) if shared else None
    delivery = Delivery(
        clients.store, clients.slack, policy=policy, lease=lease, clock=clients.pacing, shown=clients.clock
    )
    if lease is not None:
        clients.opened.push_async_callback(_released, lease, delivery)  # runs before the store closes
    # The worker processes: the digest's page judging, and the alerts' charts (drawn off this process's
    # interpreter lock, which the posts going out meanwhile need).
    pool = digest_pool(settings.digest.workers)
    enricher = _enricher(settings, clients.prometheus, pool)
    ctx = CheckContext(
        settings, wall=clients.clock, monotonic=clients.monotonic, shared=clients.readers, live_state=live
    )
    logs = ControlPlaneLogReader(ctx)
    try:
        # Every silence proxybot makes or lists goes through one `MadeSilences`: only those it made are
        # attributed to a Slack user.
        made = None if clients.alertmanager is None else MadeSilences(clients.alertmanager, clients.store)
        watch = _silence_watch(settings, clients, made, delivery, deps, lease)
        alert_worker = _alert_worker(
            settings, clients, deps, delivery, live, enricher, lease, logs, ctx, watch
        )
        digests = _digests(settings, clients, delivery, ctx, live, pool, watch, fleet)
        digests.observe = lambda outcome: deps.metrics.digest_runs.labels(outcome).inc()
        acks = Acknowledger(clients.store, delivery, clock=clients.clock)
        escalations = EscalationWatch(
            settings,
            clients.store,
            delivery,
            clients.pacing,
            silences=watch,
            lease=lease,
            observe=lambda outcome: deps.metrics.escalations.labels(outcome.value).inc(),
        )
        verifications = VerificationWatch(
            settings,
            clients.store,
            delivery,
            functools.partial(recheck, ctx),
            clients.clock,
            clients.pacing,
            lease=lease,
            observe=lambda outcome: deps.metrics.verifications.labels(outcome.value).inc(),
        )
        command_deps = _command_deps(settings, clients, made, deps.metrics, ctx, digests.runner.post_now)
        command_deps = replace(command_deps, fleet=lambda: fleet.current if fleet else None)
        command_deps = replace(command_deps, acks=acks)
        routes, slack_workers = slack_inbound(
            settings,
            deps,
            command_deps,
            made,
            delivery,
            acks=acks,
            views=clients.slack,
            watch=watch,
        )
    except BaseException:
        pool.shutdown(wait=False)  # no worker has started yet: nothing to wait for
        raise
    workers: list[Worker] = [
        lambda: say_who_posts(clients.slack),
        lambda: warm_up(pool),  # the digest's worker processes start with the bot, not at 08:00
        alert_worker.run,
        delivery.run,
        digests.run,
        *([] if warm_interval is None else [lambda: live.keep_warm(warm_interval)]),
        *([escalations.run] if configured(settings) else []),
        *([verifications.run] if verified(settings) else []),
        *([] if watch is None else [watch.run]),
    ]
    app = create_app(deps, [*workers, *slack_workers], extra=routes)
    return Bot(deps, app, clients, live, command_deps, delivery, enricher, pool, digests.runner)


async def say_who_posts(slack: ObservedSlack) -> None:
    """Log once at start whether Slack takes the bot token: readiness never depends on Slack (a Slack
    outage must not stop webhooks being accepted), so the log and `/metrics` are where it shows."""
    try:
        who = await slack.auth_test()
    except SlackError as err:
        log.error("Slack: %s; messages wait in the outbox until Slack takes them", err)
        return
    log.info("Slack: posting as %s (team %s)", who.get("user", "?"), who.get("team_id", "?"))


def _deps(settings: Settings, clients: Clients) -> Deps:
    metrics = BotMetrics()
    clients.slack.observe = lambda method, outcome: metrics.slack_calls.labels(method, outcome).inc()
    clients.slack.refused = lambda method, error: metrics.slack_refusals.labels(method, error).inc()
    readiness = [store_readiness(clients.store)]
    return Deps(
        settings=settings, store=clients.store, metrics=metrics, readiness=readiness, clock=clients.pacing
    )


async def _released(lease: Lease, delivery: Delivery) -> None:
    if delivery.cut_off:
        # A post cut off mid-flight may still reach Slack: the next leader takes over when the lease
        # expires, and looks for it then.
        log.info("the %s lease is left to expire: a Slack call was cut off by the stop", lease.name)
        return
    try:
        await lease.release()
    except StoreError as err:
        log.warning("could not release the %s lease (it expires by itself): %s", lease.name, err)


def _arrived(deps: Deps) -> Callable[[], None]:
    """A silenced group's end stored again: noted as an arrival (`Arrivals`; after its `received_at`, so
    a storm's table takes no pause for over until a newer one is applied), the alert worker woken."""

    def arrived() -> None:
        deps.arrivals.note(deps.clock())
        deps.wake.set()

    return arrived


def _alert_worker(
    settings: Settings,
    clients: Clients,
    deps: Deps,
    delivery: Delivery,
    live: LiveState,
    enricher: PromEnricher | None,
    lease: Lease | None,
    logs: ControlPlaneLogReader,
    ctx: CheckContext,
    watch: SilenceWatch | None,
) -> alerts.AlertWorker:
    shared = clients.store.backend != "sqlite"
    return alerts.register(
        settings,
        clients.store,
        delivery,
        live,
        wake=deps.wake,
        storm=storm_policy(settings),
        clock=clients.clock,
        pacing=clients.pacing,
        prometheus=enricher,
        pause=lambda: deps.activity.quiet(REQUESTS_FIRST_SECONDS),
        lease=lease,
        # Another replica's intake cannot wake this worker: on a shared store it also looks by itself.
        poll=SHARED_STORE_POLL if shared else None,
        logs=logs,
        pods=SharedTargetPods(ctx),  # the verdict: each alert's target's control-plane pods
        observe_wait=lambda part, seconds: deps.metrics.enrichment_wait_seconds.labels(part).observe(seconds),
        alertmanager=clients.active_alerts,
        silences=watch,  # the silences a resolution summary lists
        # On a shared store other replicas take notifications in too: this one cannot know the newest.
        arrivals=None if shared else (lambda: deps.arrivals.last_at),
        # What changed before an alert, from the instances' kept history (a fleet from the platform).
        changes=None if settings.platform is None else ChangeHistory(clients.store, settings.platform.url),
    )


def _digests(
    settings: Settings,
    clients: Clients,
    delivery: Delivery,
    ctx: CheckContext,
    live: LiveState,
    pool: ProcessPoolExecutor,
    watch: SilenceWatch | None,
    fleet: FleetWatch | None,
) -> digest.DigestScheduler:
    return digest.register(
        settings,
        clients.store,
        delivery,
        live.read,
        cronjobs=ContextCronJobs(ctx),
        prometheus=clients.prometheus,
        pages={c.name: clients.readers[c.name] for c in settings.clusters if c.name in clients.readers},
        executor=pool,
        triage=ContextTriage(ctx),
        workspace=clients.slack.workspace_url,
        silences=watch,
        fleet=fleet.health if fleet is not None else lambda: None,
        clock=clients.clock,
        pacing=clients.pacing,
    )


def _silence_watch(
    settings: Settings,
    clients: Clients,
    made: MadeSilences | None,
    delivery: Delivery,
    deps: Deps,
    lease: Lease | None,
) -> SilenceWatch | None:
    """Alertmanager's silences, read every few seconds and laid over the messages they cover; the
    silenced groups' alerts looked up, so a group that ended under a silence resolves."""
    if made is None:
        return None
    every = settings.alertmanager.poll_interval
    ends = None
    if clients.active_alerts is not None:
        leading = (lambda: True) if lease is None else (lambda: lease.held)
        ends = SilencedEnds(
            clients.active_alerts, clients.store, _arrived(deps), clients.pacing, every, leading
        )
    watch = SilenceWatch(made, clients.store, delivery, every, ends)
    delivery.show_silences(watch)
    return watch


def _command_deps(
    settings: Settings,
    clients: Clients,
    silences: MadeSilences | None,
    metrics: BotMetrics,
    ctx: CheckContext,
    digest_now: commands.DigestNow,
) -> commands.CommandDeps:
    shared = commands.CommandDeps.for_settings(
        settings, ctx=ctx, silences=silences, digest=digest_now, prometheus=clients.prometheus
    )
    return replace(
        shared,
        now=lambda: datetime.fromtimestamp(clients.clock(), UTC),
        observe=lambda sub, seconds: metrics.command_seconds.labels(sub).observe(seconds),
    )


def slack_inbound(
    settings: Settings,
    deps: Deps,
    command_deps: commands.CommandDeps,
    silencer: Silences | None,
    delivery: Delivery,
    *,
    acks: Acknowledger | None = None,
    views: ViewOpener | None = None,
    watch: SilenceWatch | None = None,
) -> tuple[list[BaseRoute], list[Worker]]:
    """Slack's side of the bot: the alert buttons and `/proxy`, both running the checks of `command_deps`;
    the buttons' thread answers go through `delivery`, like every Slack operation."""
    return slack_endpoints(
        settings,
        deps,
        checks=commands.button_checks(command_deps),
        silencer=silencer,
        replies=delivery,
        acks=acks,
        views=views,
        watch=watch,
        registrations=[lambda app: commands.register(app, command_deps)],
        now=command_deps.now,  # the silences a button makes are timed as the bot tells the time
    )


def slack_endpoints(
    settings: Settings,
    deps: Deps,
    *,
    checks: ButtonChecks | None = None,
    silencer: Silences | None = None,
    replies: ThreadReplies | None = None,
    acks: Acknowledger | None = None,
    views: ViewOpener | None = None,
    watch: SilenceWatch | None = None,
    client: AsyncWebClient | None = None,
    registrations: Sequence[Registration] = (),
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> tuple[list[BaseRoute], list[Worker]]:
    """The bolt app's route (HTTP mode) or worker (Socket Mode) with the alert buttons registered, then
    `registrations` (the slash commands).

    The buttons silence through `silencer` (the bot's one Alertmanager client; None: silencing is not
    configured); `checks` back *Probe now* and *Path check*; their answers in the alert's thread are
    queued as `replies` (the bot's delivery outbox; None: they go to the person who pressed only);
    `acks` backs *Acknowledge* / *Unacknowledge* (None: those buttons are not registered); `views` opens
    the *Silence…* modal (the Slack client; None: the button answers that it cannot); `watch` tells
    which silences cover a message.
    """
    button_deps = ActionDeps(
        settings,
        deps.store,
        silencer,
        checks or ButtonChecks(),
        replies=replies,
        acks=acks,
        views=views,
        watch=watch,
        now=now,
    )
    buttons: Registration = lambda app: actions.register(app, button_deps)  # noqa: E731
    return slack_routes_and_workers(settings, [buttons, *registrations], client=client)


def shared_live_state(settings: Settings, clients: Clients, metrics: BotMetrics) -> LiveState:
    """The one live state of the bot: every source's reader, or why it has none."""
    sources: dict[str, MetricsSource] = {name: Unreadable(err) for name, err in clients.unreadable.items()}
    sources.update(clients.readers)
    # Alerts stop waiting at their own budget (bot.alerts.budget); /proxy keeps the checks' timeout even
    # when the alert budget is set lower.
    return LiveState(
        sources,
        timeout=max(settings.enrichment.timeout_seconds, CHECK_TIMEOUT),
        observe=metrics.enrichment_seconds.observe,
        wall=clients.clock,
        monotonic=clients.monotonic,
    )


def _enricher(
    settings: Settings, prometheus: PrometheusClient | None, charts: Executor
) -> PromEnricher | None:
    if prometheus is None:
        return None
    return PromEnricher(prometheus, timeout=settings.enrichment.timeout_seconds, executor=charts)


def storm_policy(settings: Settings) -> StormPolicy:
    return StormPolicy(
        groups=settings.storm.groups,
        window_seconds=settings.storm.window_seconds,
        quiet_seconds=settings.storm.quiet_seconds,
    )


def store_readiness(store: Store) -> ReadinessCheck:
    """Ready when the store takes a write: a webhook can be accepted and kept (never Slack or the clusters).

    A read would not do: a full disk or a read-only database answers reads while every webhook gets 503.
    """

    async def store_ready() -> str | None:
        try:
            await store.check_writable()
        except StoreError as err:
            return f"store: {err}"
        return None

    return store_ready
