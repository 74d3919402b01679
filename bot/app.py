"""The HTTP app of `proxybot serve`: routes, and the workers that run for the app's lifetime.

`create_app(deps, workers)` only wires what it is given: every client lives in `Deps`, built by the
composition root `bot.compose` (or by a test with fakes), so nothing here builds its own client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.domain.alerts import AlertmanagerWebhook
from bot.inbound.webhook import WebhookAuth, alertmanager_route
from bot.metrics import BotMetrics
from bot.ports import Worker
from bot.store import Accepted, Store, StoreError
from config.settings import Settings

log = logging.getLogger(__name__)

# How long the app's workers get to end once cancelled at shutdown.
SHUTDOWN_GRACE = 5.0

ReadinessCheck = Callable[[], Awaitable[str | None]]  # None when ready, else why not


class Stopping:
    """Whether the process is stopping: webhooks are refused (503) and `/readyz` fails while work in flight
    ends. Set from a signal handler: a plain flag, read by the routes."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def begin(self, reason: str) -> None:
        self.reason = self.reason or reason

    @property
    def active(self) -> bool:
        return self.reason is not None


class RequestActivity:
    """How many HTTP requests are in flight; background work can wait for a quiet moment.

    During a webhook storm the alert worker's CPU would otherwise share the event loop evenly with the
    intake; pausing it while requests are in flight (a bounded wait) keeps the answers fast.
    """

    def __init__(self) -> None:
        self.in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def started(self) -> None:
        self.in_flight += 1
        self._idle.clear()

    def ended(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self._idle.set()

    async def quiet(self, max_wait: float) -> None:
        """Return once no request is in flight, or after `max_wait` seconds; always yields the loop."""
        if self.in_flight == 0:
            await asyncio.sleep(0)
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max_wait):
                await self._idle.wait()


@dataclass
class Arrivals:
    """The newest arrival this process noted (None: none since it started): each webhook's `received_at`
    before it is stored (withdrawn when the store had it already), a silenced group's end (stored again)
    once it is. The alert worker, having applied the newest, knows how long its senders have been quiet
    (`bot.alerts.storm`)."""

    last_at: float | None = None

    def note(self, at: float) -> Noted:
        """Each note moves `last_at` on, even when the clock did not (two webhooks in one tick, a step
        back): the worker, having applied one of them, then never takes itself for caught up."""
        before = self.last_at
        if before is None or at > before:
            self.last_at = at
        else:
            self.last_at = math.nextafter(before, math.inf)
        return Noted(before, self.last_at)

    def withdraw(self, noted: Noted) -> None:
        """A noted webhook that stored nothing (a repeat of one stored, as from an Alertmanager HA pair)
        is no arrival the worker could apply: forgotten, unless another was noted since."""
        if self.last_at == noted.at:
            self.last_at = noted.before


@dataclass(frozen=True)
class Noted:
    """One `Arrivals.note`: the newest before it, and after."""

    before: float | None
    at: float


class ActivityMiddleware:
    """Counts in-flight HTTP requests into a `RequestActivity` (pure ASGI: no body buffering)."""

    def __init__(self, app: ASGIApp, activity: RequestActivity) -> None:
        self.app = app
        self.activity = activity

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.activity.started()
        try:
            await self.app(scope, receive, send)
        finally:
            self.activity.ended()


@dataclass
class Deps:
    """Everything the app's routes and workers use, built once at startup."""

    settings: Settings
    store: Store
    metrics: BotMetrics = field(default_factory=BotMetrics)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    readiness: list[ReadinessCheck] = field(default_factory=list)
    activity: RequestActivity = field(default_factory=RequestActivity)
    arrivals: Arrivals = field(default_factory=Arrivals)
    clock: Callable[[], float] = time.time
    stopping: Stopping = field(default_factory=Stopping)


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def _readyz(deps: Deps) -> Callable[[Request], Awaitable[Response]]:
    async def readyz(request: Request) -> Response:
        if deps.stopping.active:  # taken out of the Service first, before the listener closes
            return JSONResponse({"ready": False, "problems": [f"stopping ({deps.stopping.reason})"]}, 503)
        problems = [p for check in deps.readiness if (p := await _check(check)) is not None]
        if problems:
            return JSONResponse({"ready": False, "problems": problems}, status_code=503)
        return JSONResponse({"ready": True, "store": deps.store.backend})

    return readyz


async def _check(check: ReadinessCheck) -> str | None:
    try:
        async with asyncio.timeout(5):
            return await check()
    except Exception as err:  # a readiness probe reports, it never fails the request
        return f"{type(err).__name__}: {err}"


METRICS_STORE_WAIT = 2.0  # seconds a scrape waits for the store's outbox figures


def _metrics(deps: Deps) -> Callable[[Request], Awaitable[Response]]:
    async def metrics(request: Request) -> Response:
        try:
            # A hung store (a frozen PostgreSQL) held a scrape 27 s: past the bound the gauges keep theirs.
            async with asyncio.timeout(METRICS_STORE_WAIT):
                depth, oldest = await deps.store.depth(), await deps.store.oldest_pending_at()
        except (StoreError, TimeoutError) as err:  # the last values stay; /readyz says what is wrong
            log.warning(
                "metrics: the store did not answer: %s", err or f"not within {METRICS_STORE_WAIT:g} s"
            )
        else:
            deps.metrics.outbox_depth.set(depth)
            deps.metrics.outbox_oldest_age.set(0.0 if oldest is None else max(0.0, deps.clock() - oldest))
        return Response(deps.metrics.exposition(), media_type="text/plain; version=0.0.4")

    return metrics


@dataclass(frozen=True)
class CountingSink:
    """The store as the intake sees it, counting what it accepts (and how much was a repeat)."""

    store: Store
    metrics: BotMetrics
    arrivals: Arrivals  # `Deps.arrivals`, which the alert worker reads

    async def accept(self, raw: bytes, webhook: AlertmanagerWebhook, received_at: float) -> Accepted:
        noted = self.arrivals.note(received_at)  # before the worker can find it stored
        accepted = await self.store.accept(raw, webhook, received_at)
        if accepted.duplicate:
            # Only then: a store call that failed may still have stored it (a commit whose answer was lost).
            self.arrivals.withdraw(noted)
        self.metrics.alerts_accepted.labels(duplicate=str(accepted.duplicate).lower()).inc()
        return accepted


def routes(deps: Deps) -> list[BaseRoute]:
    auth = WebhookAuth.from_settings(deps.settings.alertmanager)
    if not auth.configured:
        log.warning("POST /alertmanager accepts unauthenticated requests: set alertmanager.webhook_token")
    return [
        Route("/healthz", _healthz, methods=["GET"]),
        Route("/readyz", _readyz(deps), methods=["GET"]),
        Route("/metrics", _metrics(deps), methods=["GET"]),
        alertmanager_route(
            CountingSink(deps.store, deps.metrics, deps.arrivals),
            deps.wake.set,
            auth=auth,
            on_refused=lambda status: deps.metrics.notifications_refused.labels(str(status)).inc(),
            stopping=lambda: deps.stopping.active,
            clock=deps.clock,  # received_at on the alert worker's clock
        ),
    ]


def create_app(deps: Deps, workers: Sequence[Worker] = (), extra: Sequence[BaseRoute] = ()) -> Starlette:
    """The app: routes from `deps`, plus `workers` run as tasks between startup and shutdown."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        tasks: list[asyncio.Task[None]] = [
            asyncio.create_task(work(), name=getattr(work, "__name__", "worker")) for work in workers
        ]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            # Bounded: a worker that does not end when cancelled is named, and the stop goes on.
            _, stuck = await asyncio.wait(tasks, timeout=SHUTDOWN_GRACE) if tasks else (set(), set())
            for task in stuck:
                log.error("shutdown: worker %s did not stop within %g s", task.get_name(), SHUTDOWN_GRACE)

    middleware = [Middleware(ActivityMiddleware, activity=deps.activity)]
    return Starlette(routes=[*routes(deps), *extra], lifespan=lifespan, middleware=middleware)
