"""The serve app: health, readiness, own metrics, the webhook route wired to the store, worker lifecycle."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from bot import app as app_module
from bot.app import METRICS_STORE_WAIT, Arrivals, Deps, create_app
from bot.store import OutboxKind, StoreError, open_store
from config.loader import parse_config
from config.settings import Settings
from tests.bot.domain.alertmanager_samples import FIRING
from tests.waiting import eventually

CONFIG = """
slack: {default_channel: "#alerts"}
alertmanager: {url: "http://127.0.0.1:9093", webhook_token: "s3cret-token-value"}
clusters:
  - name: team-a
    kubeconfig: team-a.yaml
    match: {cluster: team-a}
    targets:
      - name: platform/crd-store
        group_versions: [example.com/v1]
        probe: {group_version: example.com/v1, resource: widgets, namespace: default}
"""


def settings(tmp_path: Path) -> Settings:
    return parse_config(CONFIG, base_dir=tmp_path, env={}, purpose="demo").settings


@pytest.fixture
async def deps(tmp_path: Path) -> AsyncIterator[Deps]:
    store = await open_store(str(tmp_path / "bot.db"))
    yield Deps(settings=settings(tmp_path), store=store)
    await store.close()


def client(app: object) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bot")  # type: ignore[arg-type]


async def test_health_and_metrics(deps: Deps) -> None:
    async with client(create_app(deps)) as http:
        assert (await http.get("/healthz")).text == "ok"
        metrics = await http.get("/metrics")
    assert metrics.status_code == 200
    assert "proxybot_outbox_depth 0.0" in metrics.text


async def test_metrics_show_how_long_the_oldest_pending_slack_operation_waits(tmp_path: Path) -> None:
    now = [1000.0]
    store = await open_store(str(tmp_path / "clocked.db"), clock=lambda: now[0])
    deps = Deps(settings=settings(tmp_path), store=store, clock=lambda: now[0])
    try:
        await store.enqueue("post:#alerts:g", "#alerts", OutboxKind.POST, {"text": "x"})
        now[0] += 42.0
        async with client(create_app(deps)) as http:
            text = (await http.get("/metrics")).text
        await store.close()  # a store that does not answer: /metrics still answers, with the last values
        async with client(create_app(deps)) as http:
            after = await http.get("/metrics")
    finally:
        await store.close()
    assert "proxybot_outbox_depth 1.0" in text
    assert "proxybot_outbox_oldest_pending_age_seconds 42.0" in text
    assert after.status_code == 200
    assert "proxybot_outbox_oldest_pending_age_seconds 42.0" in after.text


class HungStore:
    """The store, but its outbox figures never come (a PostgreSQL that stopped answering)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def depth(self) -> int:
        await asyncio.Event().wait()
        raise AssertionError("never")


async def test_metrics_answer_within_their_bound_on_a_hung_store(deps: Deps) -> None:
    hung = replace(deps, store=HungStore(deps.store))
    async with client(create_app(hung)) as http:
        # Bounded by the test only so that a regression fails instead of hanging the suite.
        answer = await asyncio.wait_for(http.get("/metrics"), timeout=METRICS_STORE_WAIT * 10)
    assert answer.status_code == 200
    assert "proxybot_outbox_depth" in answer.text


async def test_readyz_names_what_is_not_ready(deps: Deps) -> None:
    async def slack_auth() -> str | None:
        return "slack auth.test failed: invalid_auth"

    async def broken() -> str | None:
        raise RuntimeError("store closed")

    deps.readiness += [slack_auth, broken]
    async with client(create_app(deps)) as http:
        answer = await http.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["problems"] == ["slack auth.test failed: invalid_auth", "RuntimeError: store closed"]
    deps.readiness.clear()
    async with client(create_app(deps)) as http:
        assert (await http.get("/readyz")).json() == {"ready": True, "store": "sqlite"}


async def test_webhook_is_stored_and_wakes_the_worker(deps: Deps) -> None:
    headers = {"Authorization": "Bearer s3cret-token-value", "Content-Type": "application/json"}
    async with client(create_app(deps)) as http:
        refused = await http.post("/alertmanager", content=FIRING, headers={**headers, "Authorization": "x"})
        accepted = await http.post("/alertmanager", content=FIRING, headers=headers)
    assert refused.status_code == 401
    assert accepted.status_code == 202
    assert deps.wake.is_set()
    async with client(create_app(deps)) as http:
        again = await http.post("/alertmanager", content=FIRING, headers=headers)
        metrics = (await http.get("/metrics")).text
    assert again.json()["duplicate"] is True
    assert 'proxybot_notifications_accepted_total{duplicate="false"} 1.0' in metrics
    assert 'proxybot_notifications_accepted_total{duplicate="true"} 1.0' in metrics
    assert 'proxybot_notifications_refused_total{status="401"} 1.0' in metrics
    [pending] = await deps.store.pending()
    assert json.loads(pending.raw) == json.loads(FIRING)


async def test_once_stopping_webhooks_get_503_and_readyz_fails(deps: Deps) -> None:
    headers = {"Authorization": "Bearer s3cret-token-value", "Content-Type": "application/json"}
    async with client(create_app(deps)) as http:
        assert (await http.get("/readyz")).status_code == 200
        deps.stopping.begin("SIGTERM")
        refused = await http.post("/alertmanager", content=FIRING, headers=headers)
        unauthenticated = await http.post(
            "/alertmanager", content=FIRING, headers={**headers, "Authorization": "x"}
        )
        ready = await http.get("/readyz")
        metrics = (await http.get("/metrics")).text
    assert (refused.status_code, refused.headers["Retry-After"]) == (503, "1")
    assert "stopping" in refused.json()["error"]
    assert unauthenticated.status_code == 401  # credentials are still checked first
    assert (ready.status_code, ready.json()["problems"]) == (503, ["stopping (SIGTERM)"])
    assert 'proxybot_notifications_refused_total{status="503"} 1.0' in metrics
    assert await deps.store.pending() == []  # nothing stored: nothing acknowledged


async def test_workers_run_for_the_apps_lifetime(deps: Deps) -> None:
    started, stopped = asyncio.Event(), asyncio.Event()

    async def worker() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    app = create_app(deps, [worker])
    async with app.router.lifespan_context(app):
        await asyncio.wait_for(started.wait(), 5)
        assert not stopped.is_set()
    assert stopped.is_set()


async def test_request_activity_lets_background_work_wait_for_a_quiet_moment(deps: Deps) -> None:
    activity = deps.activity
    release = asyncio.Event()

    async def slow(request: object) -> PlainTextResponse:
        await release.wait()
        return PlainTextResponse("done")

    app = create_app(deps, extra=[Route("/slow", slow)])
    async with client(app) as http:
        request = asyncio.create_task(http.get("/slow"))
        await eventually(lambda: activity.in_flight, "the slow request in flight", timeout=5, interval=0.001)
        started = time.monotonic()
        await activity.quiet(0.05)  # bounded: the request is still in flight
        assert time.monotonic() - started >= 0.04
        waiter = asyncio.create_task(activity.quiet(10))
        await asyncio.sleep(0.01)  # a wait for nothing: the waiter must not return while a request runs
        assert not waiter.done()
        release.set()
        assert (await request).text == "done"
        await asyncio.wait_for(waiter, 5)  # returns as soon as nothing is in flight
    assert activity.in_flight == 0


async def test_a_worker_that_ignores_cancellation_does_not_hold_the_stop(
    deps: Deps, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "SHUTDOWN_GRACE", 0.2)
    running, ended = asyncio.Event(), asyncio.Event()

    async def stubborn() -> None:
        running.set()
        try:
            await asyncio.sleep(3600)  # not a wait for time: it runs until it is cancelled
        except asyncio.CancelledError:
            await asyncio.sleep(1.0)  # a bug: it swallows the cancel and carries on for a while
        ended.set()

    app = create_app(deps, [stubborn])
    started = time.monotonic()
    async with app.router.lifespan_context(app):
        await asyncio.wait_for(running.wait(), 5)  # the worker is inside its sleep: the stop cancels it there
    elapsed = time.monotonic() - started
    assert elapsed < 0.9
    await ended.wait()
    assert any("did not stop within 0.2 s" in r.getMessage() for r in caplog.records)


async def test_a_webhook_is_noted_as_an_arrival_on_the_workers_clock_before_it_is_stored(
    tmp_path: Path,
) -> None:
    """`Deps.arrivals` (what the alert worker's storm tables wait on) is set before the row can be
    found, on `Deps.clock`; a refused webhook is no arrival."""
    now = [5000.0]
    store = await open_store(str(tmp_path / "arrivals.db"))
    deps = Deps(settings=settings(tmp_path), store=store, clock=lambda: now[0])
    seen: list[float | None] = []
    accept = store.accept

    async def noting(*args: object, **kwargs: object) -> object:
        seen.append(deps.arrivals.last_at)
        return await accept(*args, **kwargs)  # type: ignore[arg-type]

    store.accept = noting  # type: ignore[method-assign]
    headers = {"Authorization": "Bearer s3cret-token-value", "Content-Type": "application/json"}
    try:
        async with client(create_app(deps)) as http:
            refused = await http.post(
                "/alertmanager", content=FIRING, headers={**headers, "Authorization": "x"}
            )
            assert (refused.status_code, deps.arrivals.last_at) == (401, None)
            accepted = await http.post("/alertmanager", content=FIRING, headers=headers)
    finally:
        await store.close()
    assert accepted.status_code == 202
    assert seen == [5000.0]
    assert deps.arrivals.last_at == 5000.0


async def test_a_repeat_that_stored_nothing_is_no_arrival_and_a_failed_store_call_stays_one(
    tmp_path: Path,
) -> None:
    """A webhook the store already has (an Alertmanager HA pair sends each twice) would keep the storm
    table waiting for an arrival no worker can apply; one whose store call failed may have been stored."""
    now = [5000.0]
    store = await open_store(str(tmp_path / "repeats.db"))
    deps = Deps(settings=settings(tmp_path), store=store, clock=lambda: now[0])
    headers = {"Authorization": "Bearer s3cret-token-value", "Content-Type": "application/json"}
    try:
        async with client(create_app(deps)) as http:
            assert (await http.post("/alertmanager", content=FIRING, headers=headers)).status_code == 202
            now[0] = 5001.0
            assert (await http.post("/alertmanager", content=FIRING, headers=headers)).status_code == 202
            assert deps.arrivals.last_at == 5000.0, "the repeat withdrawn"

            async def failing(*args: object, **kwargs: object) -> object:
                raise StoreError("disk I/O error")

            store.accept = failing  # type: ignore[method-assign]
            now[0] = 5002.0
            other = FIRING.replace(b"firing", b"resolved", 1)
            assert (await http.post("/alertmanager", content=other, headers=headers)).status_code == 503
    finally:
        await store.close()
    assert deps.arrivals.last_at == 5002.0, "a failed store call is kept as an arrival"


@pytest.mark.parametrize("second", [5000.0, 4999.0], ids=["same-tick", "clock-stepped-back"])
def test_a_second_arrival_is_newer_than_the_first_whatever_the_clock_said(second: float) -> None:
    """The worker, having applied the first, must not take itself for caught up (`_caught_up` compares
    the newest noted with what it applied)."""
    arrivals = Arrivals()
    arrivals.note(5000.0)
    arrivals.note(second)
    assert arrivals.last_at is not None
    assert arrivals.last_at > 5000.0
    arrivals.note(6000.0)
    assert arrivals.last_at == 6000.0
    repeat = arrivals.note(6000.0)
    arrivals.note(7000.0)
    arrivals.withdraw(repeat)  # another noted since: kept
    assert arrivals.last_at == 7000.0
