"""CheckContext: target resolution, lazily opened readers, live state against the simulator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.checks.context import CheckContext, resolve_target
from bot.errors import InputError
from config.loader import load_settings
from config.settings import Settings
from sim.server import SimServer


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    directory = tmp_path_factory.mktemp("sim")
    with SimServer(scenario="healthy", speed=10) as srv:
        yield load_settings(srv.write_config(directory / "proxybot.yaml"), env={}, purpose="demo")


def test_targets_resolve_only_from_the_config(settings: Settings) -> None:
    assert resolve_target(settings, "platform/crd-store").cluster.name == "team-a"
    for hostile in ("platform/../secrets", "platform/crd-store?x=1", "", "x" * 500):
        with pytest.raises(
            InputError, match=r"^TARGET: .* is not a configured target \(configured: platform/"
        ):
            resolve_target(settings, hostile)


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
