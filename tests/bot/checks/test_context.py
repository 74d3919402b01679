"""CheckContext: target resolution, readers shared or opened once each, live state against the simulator."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.clients.kube import KubeReader
from bot.errors import InputError
from bot.live import LiveState
from bot.reads.context import CheckContext, live_sources, resolve_target, suggested
from config.loader import load_config
from config.settings import Settings
from sim.server import SimServer
from tests.waiting import eventually


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    directory = tmp_path_factory.mktemp("sim")
    with SimServer(scenario="healthy", speed=10) as srv:
        yield load_config(srv.write_config(directory / "proxybot.yaml"), env={}, purpose="demo").settings


def test_targets_resolve_only_from_the_config(settings: Settings) -> None:
    assert resolve_target(settings, "platform/crd-store").cluster.name == "team-a"
    for hostile in ("platform/../secrets", "platform/crd-store?x=1", "", "x" * 500):
        with pytest.raises(
            InputError, match=r"^TARGET: .* is not a configured target \(configured: platform/"
        ):
            resolve_target(settings, hostile)


def test_a_mistyped_name_is_offered_a_few_names_closest_first() -> None:
    assert suggested("x", []) == "configured: none you may query"
    assert suggested("p/b", ["p/c", "p/a"]) == "configured: p/a, p/c"
    many = [f"team/svc-{i}" for i in range(100)]
    assert suggested("team/svc-42x", many, most=3) == (
        "closest of 100 configured: team/svc-42, team/svc-4, team/svc-2, +97 more"
    )
    # Nothing close: the first names, so the answer still says what TARGET looks like.
    assert suggested("zzz", many, most=2) == "closest of 100 configured: team/svc-0, team/svc-1, +98 more"


async def test_live_state_and_readers_are_shared(settings: Settings) -> None:
    ctx = CheckContext(settings)
    try:
        live = await ctx.live()
        read = await live.read("team-a")
        assert read.snapshot is not None
        assert "platform/crd-store" in read.snapshot.targets()
        ref = resolve_target(settings, "platform/crd-store")
        assert await ctx.client(ref.cluster) is await ctx.client(ref.cluster)
        direct = await ctx.direct(ref)
        assert direct is not None
        assert direct.name == "crd-store"
    finally:
        await ctx.aclose()


async def test_an_unloadable_kubeconfig_is_a_reason_in_live_state(settings: Settings, tmp_path: Path) -> None:
    cluster = settings.clusters[0].model_copy(update={"kubeconfig": tmp_path / "missing.yaml"})
    broken = settings.model_copy(update={"clusters": (cluster,)})
    ctx = CheckContext(broken)
    try:
        read = await (await ctx.live()).read("team-a")
    finally:
        await ctx.aclose()
    assert read.snapshot is None
    assert read.unavailable is not None
    assert "missing.yaml" in read.unavailable


async def test_the_bots_readers_and_live_state_are_used_not_opened_again(settings: Settings) -> None:
    team_a = settings.clusters[0]
    reader = await KubeReader.connect("team-a", team_a.kubeconfig, team_a.context)
    live = LiveState({"team-a": reader})
    ctx = CheckContext(settings, shared={"team-a": reader}, live_state=live)
    try:
        assert await ctx.client(team_a) is reader
        assert await ctx.live() is live
    finally:
        await ctx.aclose()
    try:
        assert "vcluster_proxy_peers" in await reader.syncer_metrics(timeout=5), (
            "still open: not the context's"
        )
    finally:
        await reader.close()


async def test_each_reader_opens_once_and_a_slow_kubeconfig_holds_up_no_open_reader(
    settings: Settings, tmp_path: Path
) -> None:
    # A FIFO's open blocks until a writer comes, and it can be read once: a second opening would hang.
    fifo = tmp_path / "slow.yaml"
    os.mkfifo(fifo)
    team_a = settings.clusters[0]
    ctx = CheckContext(settings)
    try:
        opened = await ctx.client(team_a)
        slow = [asyncio.create_task(ctx.reader("slow", fifo, "team-a")) for _ in range(2)]
        # Both wait for the slow file once a reader has it open: it then reads until our end is closed.
        writer = await eventually(lambda: _writer_end(fifo), "a reader opening the slow kubeconfig")
        assert await asyncio.wait_for(ctx.client(team_a), timeout=1) is opened
        assert not any(task.done() for task in slow)
        await asyncio.to_thread(_write_and_close, writer, team_a.kubeconfig.read_bytes())
        first, second = await asyncio.wait_for(asyncio.gather(*slow), timeout=5)
        assert first is second
    finally:
        await ctx.aclose()


def _writer_end(fifo: Path) -> int | None:
    """The FIFO opened for writing, once a reader has it open (before then the open is refused)."""
    try:
        writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # ENXIO: nobody is reading it yet
        return None
    os.set_blocking(writer, True)
    return writer


def _write_and_close(writer: int, data: bytes) -> None:
    with os.fdopen(writer, "wb") as end:
        end.write(data)


def test_live_sources_are_every_cluster_and_its_listed_replicas(settings: Settings) -> None:
    names = [source.name for source in live_sources(settings)]
    assert names[0] == "team-a"
    assert "team-a/team-a-0" in names
    assert len(names) == len(set(names))
