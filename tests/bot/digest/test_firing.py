"""The digest's alerts firing now: worst then oldest first, each linked to its message when it can be."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from bot.digest.firing import archive_link, firing_alerts
from bot.domain.alert_summary import WorstSeen
from bot.domain.alerts import AlertStatus
from bot.domain.findings import Severity
from bot.store import AlertGroupState, Store, open_store
from bot.store.models import GroupFacts

WORKSPACE = "https://acme.slack.com/"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'p.db'}")
    yield opened
    await opened.close()


async def posted(
    store: Store,
    key: str,
    first: float,
    *,
    worst: Severity | None = None,
    label: str = "warning",
    incident: str | None = None,
) -> None:
    labels = {"alertname": f"Alert{key}", "target": "team-a/db", "severity": label}
    seen = None if worst is None else WorstSeen(worst, "no healthy peers")
    kept = GroupFacts(firing_labels=(labels,), worst_seen=seen, incident=incident)
    await store.save_group(
        AlertGroupState("#alerts", key, AlertStatus.FIRING, first_firing_at=first, facts=kept)
    )
    await store.record_post("#alerts", key, f"1700000{int(first):03d}.000100", "C0ALERTS")


class Workspace:
    """auth.test's URL as the Slack client keeps it; counts how often it was asked."""

    def __init__(self, url: str | None) -> None:
        self.url, self.asked = url, 0

    async def __call__(self) -> str | None:
        self.asked += 1
        return self.url


async def test_worst_first_then_oldest_each_linked_to_its_message(store: Store) -> None:
    await posted(store, "1", 100.0)
    # Its findings got critical, but its message is headed by its warning alert: the digest says the same
    # (it said 🔴 beside the thread's 🟠).
    await posted(store, "2", 200.0, worst=Severity.CRITICAL)
    await posted(store, "3", 300.0, label="critical")
    await posted(store, "4", 50.0, incident="2")  # joined incident 2: that message carries it
    found = await firing_alerts(store, Workspace(WORKSPACE))
    assert [(a.name, a.severity, a.since) for a in found] == [
        ("Alert3", Severity.CRITICAL, 300.0),
        ("Alert1", Severity.WARNING, 100.0),
        ("Alert2", Severity.WARNING, 200.0),
    ]
    assert found[0].link == "https://acme.slack.com/archives/C0ALERTS/p1700000300000100"
    assert found[0].target == "team-a/db"


async def test_an_incident_is_headed_by_its_member_that_pages_harder_as_its_message_is(
    store: Store,
) -> None:
    await posted(store, "1", 100.0)
    first = await store.get_group("#alerts", "1")
    assert first is not None
    await store.save_group(replace(first, facts=replace(first.facts, members=("2",))))
    critical = {"alertname": "Alert2", "target": "team-a/db", "severity": "critical"}
    member = GroupFacts(firing_labels=(critical,), incident="1")
    await store.save_group(
        AlertGroupState("#alerts", "2", AlertStatus.FIRING, first_firing_at=150.0, facts=member)
    )
    [alert] = await firing_alerts(store, Workspace(WORKSPACE))
    assert (alert.name, alert.severity, alert.since) == ("Alert2", Severity.CRITICAL, 100.0)


async def test_without_a_workspace_url_nothing_is_linked(store: Store) -> None:
    await posted(store, "1", 100.0)
    [alert] = await firing_alerts(store, Workspace(None))
    assert alert.link is None
    [alert] = await firing_alerts(store, None)
    assert alert.link is None


async def test_slack_is_not_asked_when_nothing_fires(store: Store) -> None:
    workspace = Workspace(WORKSPACE)
    assert await firing_alerts(store, workspace) == ()
    assert workspace.asked == 0


def test_an_archive_link_needs_a_channel_id_and_a_ts_of_slacks_shape() -> None:
    assert archive_link(WORKSPACE, "C0ALERTS", "1.5") == "https://acme.slack.com/archives/C0ALERTS/p15"
    assert archive_link(WORKSPACE, None, "1.5") is None
    assert archive_link(WORKSPACE, "#alerts", "1.5") is None
    assert archive_link(WORKSPACE, "C0ALERTS|x", "1.5") is None
    assert archive_link(WORKSPACE, "C0ALERTS", "1.5>") is None
    assert archive_link(None, "C0ALERTS", "1.5") is None
