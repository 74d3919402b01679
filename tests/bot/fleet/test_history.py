"""Each platform reading recorded as its instances' history: a version where an instance's proxy facts change,
secrets never kept, a vcluster.yaml that is not YAML said without quoting it; and, through the platform
stand-in, the config-change scenario's change told as an alert would tell it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest
import yaml

from bot.alerts.change_enrich import ChangeHistory, change_report, instance_ref
from bot.domain.changes import ChangeKind, InstanceFacts, InstanceVersion
from bot.fleet.history import HistoryRecorder, instance_facts
from bot.fleet.watch import FleetWatch
from bot.store import Store, StoreError, open_store
from config.loader import load_config
from config.settings import Settings
from sim.defaults import SECONDARY_GV
from sim.scenarios import FAULT_AT, NEXT_TARGET, NEXT_VERSION
from sim.server import SimServer
from tests.bot.fleet.test_instances import listed, one, vci
from tests.waiting import eventually

PLATFORM = "https://platform.example.com"
CLIENT_YAML = """
experimental:
  proxy:
    customResources:
      widgets.example.com/v1: {enabled: true, targetVirtualCluster: {name: crd-store}}
policies:
  networkPolicy: {enabled: true}
controlPlane: {statefulSet: {env: [{name: A, value: b}]}}
"""


def test_the_facts_are_the_proxy_section_the_policy_values_and_the_version() -> None:
    facts = instance_facts(one(vci(spec_values=CLIENT_YAML, spec_version="0.37.1")))
    entry = {"enabled": True, "targetVirtualCluster": {"name": "crd-store"}}
    assert facts.proxy == {"customResources": {"widgets.example.com/v1": entry}}
    assert facts.network_policy == {"enabled": True}
    assert facts.version == "0.37.1"


def test_a_vcluster_yaml_that_is_not_yaml_is_said_without_quoting_it() -> None:
    facts = instance_facts(one(vci(spec_values="a: b\npassword: [hunter22", spec_version="1")))
    assert facts.unreadable is not None
    assert facts.unreadable.startswith("not YAML at line ")
    assert "hunter22" not in str(facts.document())


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    yield opened
    await opened.close()


async def test_a_reading_records_only_the_instances_whose_facts_changed(store: Store) -> None:
    client = vci(spec_values=CLIENT_YAML, spec_version="0.37.1")
    target = vci("crd-store", spec_values="policies: {networkPolicy: {enabled: true}}", spec_version="0.37.1")
    first = listed(client, target)
    recorder = HistoryRecorder(store, PLATFORM)
    assert await recorder.record("p-", first) == ["platform/team-a", "platform/crd-store"]
    # Another replica (or a restart) reading the same: nothing new.
    assert await HistoryRecorder(store, PLATFORM).record("p-", first) == []
    upgraded = vci(
        "crd-store", spec_values="policies: {networkPolicy: {enabled: true}}", spec_version="0.38.0"
    )
    assert await recorder.record("p-", listed(client, upgraded)) == ["platform/crd-store"]
    history = await store.instance_history(PLATFORM, "platform/crd-store", 0.0)
    assert [v.facts.version for v in history] == ["0.37.1", "0.38.0"]


async def test_a_secret_in_a_vcluster_yaml_is_never_kept(store: Store) -> None:
    secret = CLIENT_YAML.replace("{enabled: true}", "{enabled: true, token: s3cr3t-t0ken}")
    await HistoryRecorder(store, PLATFORM).record("p-", listed(vci(spec_values=secret, spec_version="1")))
    [kept] = await store.instance_history(PLATFORM, "platform/team-a", 0.0)
    assert "s3cr3t" not in str(kept.facts.document())


class CountingStore:
    """The store's recording, counted, failing while `failing` (as a locked database does)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls = 0
        self.failing = False

    async def record_instance_versions(
        self, platform: str, versions: Sequence[tuple[str, InstanceFacts]], *, keep: int, keep_for: float
    ) -> list[str]:
        self.calls += 1
        if self.failing:
            raise StoreError("database is locked")
        return await self.store.record_instance_versions(platform, versions, keep=keep, keep_for=keep_for)

    async def instance_history(self, platform: str, instance: str, since: float) -> list[InstanceVersion]:
        return await self.store.instance_history(platform, instance, since)


async def test_an_unchanged_reading_is_not_sent_and_a_failed_one_is_sent_again(store: Store) -> None:
    counting = CountingStore(store)
    recorder = HistoryRecorder(counting, PLATFORM)
    reading = listed(vci(spec_values=CLIENT_YAML, spec_version="0.37.1"))
    assert await recorder.record("p-", reading) == ["platform/team-a"]
    assert await recorder.record("p-", reading) == []
    assert counting.calls == 1
    changed = listed(vci(spec_values=CLIENT_YAML, spec_version="0.37.2"))
    counting.failing = True
    with pytest.raises(StoreError):
        await recorder.record("p-", changed)
    counting.failing = False
    assert await recorder.record("p-", changed) == ["platform/team-a"]
    assert counting.calls == 3


@pytest.fixture
def config_change() -> Iterator[SimServer]:
    # Held before the change at t=60 until the test lets the simulated clock run.
    with SimServer(scenario="config-change", speed=20, platform=True, hold_at=30.0) as srv:
        yield srv


def settings_on(srv: SimServer, tmp_path: Path) -> Settings:
    config = srv.write_config(tmp_path / "proxybot.yaml")
    doc = yaml.safe_load(config.read_text())
    doc["store"] = {"url": f"sqlite:///{tmp_path / 'bot.db'}"}
    config.write_text(yaml.safe_dump(doc))
    return load_config(config, env={}).settings


async def test_the_config_change_scenario_is_recorded_and_told_through_the_platform(
    config_change: SimServer, tmp_path: Path
) -> None:
    settings = settings_on(config_change, tmp_path)
    clock = config_change.shown_time
    watch = FleetWatch(settings, clock=clock)
    try:
        await watch.first()
        client = next(c for c in watch.current.clusters if c.name == "team-a")  # type: ignore[union-attr]
        client_ref = instance_ref(client)
        assert client_ref == "platform/team-a"
        config_change.hold_at = None  # the simulated clock runs on: team-a's vcluster.yaml changes at t=60
        await eventually(lambda: config_change.world.now() > FAULT_AT + 1, "the change at t=60")
        watch.refresh = 0.05  # the next reading at once: it finds team-a forwarding to a new target
        await asyncio.wait_for(watch.changed(), 30.0)
        assert watch.store is not None
        target_ref = f"platform/{NEXT_TARGET}"
        fired = clock() + 120.0  # the alert about the new target fires two minutes later
        history = ChangeHistory(watch.store, watch.reader.platform.url)
        report = await change_report(history, [client_ref, target_ref], fired, budget=5.0)
        assert report is not None
        [change] = report.changes
        assert {c.kind for c in change.changes} == {
            ChangeKind.RETARGETED,
            ChangeKind.POLICY,
            ChangeKind.VERSION,
        }
        line = report.line()
        assert line.startswith(
            f"2 min before: team-a's vcluster.yaml retargeted `datasets.{SECONDARY_GV}` to {target_ref}"
            " (was platform/crd-store)"
        )
        assert line.endswith(f"team-a's control plane restarted with vcluster {NEXT_VERSION} (was 0.37.1)")
        assert f'+datasets.{SECONDARY_GV} targetVirtualCluster.name: "{NEXT_TARGET}"' in report.diff()
    finally:
        await watch.aclose()


async def test_a_store_failing_the_history_costs_the_version_never_the_reading(
    config_change: SimServer, tmp_path: Path
) -> None:
    watch = FleetWatch(settings_on(config_change, tmp_path), clock=config_change.shown_time)
    try:
        await watch.first()
        assert watch.store is not None
        counting = CountingStore(watch.store)
        counting.failing = True
        watch._history = HistoryRecorder(counting, watch.reader.platform.url)  # its store's recording fails
        config_change.hold_at = None
        await eventually(lambda: config_change.world.now() > FAULT_AT + 1, "the change at t=60")
        watch.refresh = 0.05
        fleet = await asyncio.wait_for(watch.changed(), 30.0)  # read and served all the same
        assert NEXT_TARGET in {t.name.partition("/")[2] for c in fleet.clusters for t in c.targets}
        assert counting.calls >= 1
        history = await watch.store.instance_history(watch.reader.platform.url, "platform/team-a", 0.0)
        assert [v.facts.version for v in history] == ["0.37.1"]  # the change was not recorded
    finally:
        await watch.aclose()
