"""The fleet as `proxybot fleet` and `/proxy fleet` show it, from the platform's reading or the config."""

from __future__ import annotations

from collections.abc import Iterable

from bot.domain.fleet import FleetReport, FleetRow, FleetTarget
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
    return FleetClient(cluster.name, Origin.CONFIG, None, None, cluster, cluster.channel)


def _row(client: FleetClient, settings: Settings) -> FleetRow:
    cluster = client.settings
    targets = () if cluster is None else tuple(FleetTarget(t.name, t.group_versions) for t in cluster.targets)
    control_plane = client.control_plane
    if control_plane is None and cluster is not None and cluster.control_plane is not None:
        control_plane = cluster.control_plane_namespace
    channel = (
        settings.alert_channel(cluster)
        if cluster is not None
        else client.channel or settings.slack.default_channel
    )
    return FleetRow(
        client.name, client.origin.value, client.project, control_plane, channel, targets, client.problems
    )
