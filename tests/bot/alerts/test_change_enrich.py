"""An alert's change history read within the enrichment budget: a slow or failing store is said in the line,
never raised and never waited for past the budget; a client listed by hand has no instance."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

from bot.alerts.change_enrich import ChangeHistory, ChangeRound, change_report, group_report, instance_ref
from bot.domain.changes import InstanceFacts, InstanceVersion
from bot.store import StoreError
from config.clusters import ClusterSettings
from config.settings import Settings
from tests.fakes.alert_views import NOW, alert, group

PLATFORM = "https://platform.example.com"
CLIENT, TARGET = "platform/team-a", "platform/crd-store"
FIRED = 10_000.0


class History:
    """A store's history reads: answered from `versions`, or never (`hang`), or failing (`fail`)."""

    def __init__(
        self, versions: dict[str, list[InstanceVersion]], hang: Sequence[str] = (), fail: Sequence[str] = ()
    ):
        self.versions = versions
        self.hang, self.fail = set(hang), set(fail)
        self.asked: list[tuple[str, str, float]] = []

    async def record_instance_versions(
        self, platform: str, versions: Sequence[tuple[str, InstanceFacts]], *, keep: int, keep_for: float
    ) -> list[str]:
        raise AssertionError("enrichment never records")

    async def instance_history(self, platform: str, instance: str, since: float) -> list[InstanceVersion]:
        self.asked.append((platform, instance, since))
        if instance in self.hang:
            await asyncio.Event().wait()
        if instance in self.fail:
            raise StoreError("database is locked")
        return [v for v in self.versions.get(instance, []) if v.instance == instance]


def versions(ref: str, *at_versions: tuple[float, str]) -> list[InstanceVersion]:
    return [InstanceVersion(ref, i + 1, at, InstanceFacts.of({}, v)) for i, (at, v) in enumerate(at_versions)]


HISTORY = {
    CLIENT: versions(CLIENT, (FIRED - 7200, "0.37.1")),
    TARGET: versions(TARGET, (FIRED - 7200, "0.27.3"), (FIRED - 720, "0.28.1")),
}


async def test_the_report_reads_both_ends_once_for_every_alert_of_the_next_seconds() -> None:
    store = History(HISTORY)
    history = ChangeHistory(store, PLATFORM, ttl=60.0)
    for _ in range(3):
        report = await change_report(history, [CLIENT, TARGET], FIRED, budget=5.0)
        assert report is not None
        assert report.line() == (
            "12 min before: crd-store's control plane restarted with vcluster 0.28.1 (was 0.27.3)"
        )
    assert sorted(store.asked) == [(PLATFORM, TARGET, 0.0), (PLATFORM, CLIENT, 0.0)]


async def test_a_slow_store_is_said_in_the_line_at_the_budget() -> None:
    history = ChangeHistory(History(HISTORY, hang=[CLIENT, TARGET]), PLATFORM)
    started = time.monotonic()
    report = await change_report(history, [CLIENT, TARGET], FIRED, budget=0.2)
    assert time.monotonic() - started < 2.0
    await history.cancel_pending()
    assert report is not None
    assert report.line() == (
        "Changes before it: unknown, the history could not be read (the store did not answer within 0.2 s)"
    )


async def test_one_end_failing_is_said_beside_the_other() -> None:
    history = ChangeHistory(History(HISTORY, fail=[CLIENT]), PLATFORM)
    report = await change_report(history, [CLIENT, TARGET], FIRED, budget=5.0)
    assert report is not None
    assert report.line() == (
        "12 min before: crd-store's control plane restarted with vcluster 0.28.1 (was 0.27.3); "
        "team-a's history could not be read (the store failed: StoreError)"
    )


async def test_without_a_platform_there_is_no_report() -> None:
    assert await change_report(None, [CLIENT, TARGET], FIRED, budget=5.0) is None


async def test_a_client_listed_by_hand_is_left_out() -> None:
    report = await change_report(ChangeHistory(History(HISTORY), PLATFORM), [None, TARGET], FIRED, budget=5.0)
    assert report is not None
    assert [e.instance for e in report.ends] == [TARGET]


def cluster(context: str) -> ClusterSettings:
    return ClusterSettings.model_validate(
        {
            "name": "team-a",
            "kubeconfig": Path("/dev/null"),
            "context": context,
            "match": {"namespace": "vcluster-team-a"},
            "targets": [
                {
                    "name": TARGET,
                    "group_versions": ["example.com/v1"],
                    "probe": {
                        "group_version": "example.com/v1",
                        "resource": "widgets",
                        "namespace": "default",
                    },
                }
            ],
        }
    )


def test_a_discovered_clients_instance_is_the_one_its_context_reads_through() -> None:
    assert instance_ref(cluster("project/platform/virtualcluster/team-a")) == CLIENT
    assert instance_ref(cluster("kind-team-a")) is None
    assert instance_ref(cluster("project/platform/cluster/team-a")) is None


async def test_a_groups_report_is_of_its_client_instance_and_its_targets_before_its_first_alert() -> None:
    target = "shop/orders"
    settings = Settings.model_validate(
        {
            "slack": {"default_channel": "#proxy-alerts"},
            "clusters": [cluster("project/shop/virtualcluster/team-a").model_dump()],
        }
    )
    fired = NOW.timestamp() - 12 * 60  # the group's first alert fired 12 min before NOW
    store = History(
        {
            "shop/team-a": versions("shop/team-a", (fired - 3600, "0.37.1"), (fired - 300, "0.37.2")),
            target: versions(target, (fired - 3600, "0.37.1")),
        }
    )
    changes = ChangeRound(ChangeHistory(store, PLATFORM), budget=5.0)
    changes.start(["shop/team-a", target])
    await asyncio.wait(changes.tasks, timeout=5.0)
    changes.collect()
    report = group_report(changes, settings, group(alert(), cluster="team-a"))
    assert report is not None
    assert [e.instance for e in report.ends] == ["shop/team-a", target]
    assert report.line() == "5 min before: team-a's control plane restarted with vcluster 0.37.2 (was 0.37.1)"
