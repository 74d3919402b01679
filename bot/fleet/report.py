"""The fleet as `proxybot fleet` and `/proxy fleet` show it, from the platform's reading or the config."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from bot.domain.fleet import FleetReport, FleetRow
from bot.fleet.derive import Fleet, FleetClient, Origin
from config.clusters import ClusterSettings
from config.settings import Settings


def fleet_report(settings: Settings, fleet: Fleet | None, shown: Iterable[str] | None = None) -> FleetReport:
    """Every client of `fleet` (None: the configuration's clients), only those named in `shown` if given."""
    clients = fleet.clients if fleet is not None else tuple(_listed(c) for c in settings.clusters)
    allowed = None if shown is None else set(shown)
    rows = tuple(_row(c, settings) for c in clients if allowed is None or c.name in allowed)
    platform = settings.platform.url if settings.platform is not None else None
    problems = tuple(str(p) for p in fleet.problems) if fleet is not None else ()
    instances = fleet.instances if fleet is not None else 0
    return FleetReport(rows, problems, platform, instances, hidden=len(clients) - len(rows))


def unreadable(settings: Settings, error: str) -> FleetReport:
    platform = settings.platform.url if settings.platform is not None else None
    return FleetReport((), platform=platform, error=error)


def _listed(cluster: ClusterSettings) -> FleetClient:
    return FleetClient.of(cluster.name, Origin.CONFIG, None, cluster, cluster.channel)


def _row(client: FleetClient, settings: Settings) -> FleetRow:
    """The client's row, its channel the one its alerts go to (the default channel when it names none)."""
    channel = settings.alert_channel(client.settings) if client.settings else client.row.channel
    return replace(client.row, channel=channel or settings.slack.default_channel)
