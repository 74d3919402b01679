"""The fleet derived from the platform's instances: each client's settings, as if written by hand.

Pure: the instances, the settings' `platform:` and `clusters:` and the path of the platform's kubeconfig in,
a `Fleet` out. A client is an instance whose vcluster.yaml enables `experimental.proxy.customResources`
entries; `proxybot check-vcluster`'s rules judge it, and one vCluster would refuse is listed with the rule
it breaks and not read as if it worked. Its targets are its entries' `targetVirtualCluster`s (the client's
project unless an entry names another), with the entries' group/versions; the probe lists the first
explicitly named resource (`<resource>.<group>/<version>`) in `default`, unless a `clusters:` entry refines
it. Every read goes through the platform: the client and its targets through their virtual cluster paths,
their control planes through the connected cluster's path (`bot/fleet/access.py` names the contexts).
A client's alerts are its own by the namespace its control plane is scraped in (plus `platform.cluster_label`
naming the connected cluster, when set); its channel is its instance's `proxybot.io/slack-channel`
annotation, else its project's in `platform.project_channels`, else the default channel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bot.checks.vcluster_yaml import judge_vcluster_yaml
from bot.domain.fleet import FleetRow, FleetTarget
from bot.domain.vcluster_yaml_result import ProblemSeverity, ProxyState, Route
from bot.fleet.access import cluster_context, virtual_cluster_context
from bot.fleet.instances import FleetProblem, Instance
from config.clusters import ClusterSettings
from config.fields import format_loc, located
from config.platform import CHANNEL_ANNOTATION, ClusterRefinement, PlatformSettings
from config.validation import slack_channel

DEFAULT_PROBE_NAMESPACE = "default"


class Origin(StrEnum):
    PLATFORM = "platform"
    CONFIG = "config"


@dataclass(frozen=True, slots=True)
class FleetClient:
    """One client as the bot sees it: its row (where it came from, its targets, its problems, as `proxybot
    fleet` shows it), and its settings when it can be read (None: listed, not read; its problems say why)."""

    row: FleetRow
    settings: ClusterSettings | None

    @classmethod
    def of(
        cls,
        name: str,
        origin: Origin,
        where: Instance | None,
        settings: ClusterSettings | None,
        channel: str | None,
        problems: Sequence[str] = (),
    ) -> FleetClient:
        """A client of `origin`, its control plane `where` its instance says (None: as configured)."""
        targets = (
            () if settings is None else tuple(FleetTarget(t.name, t.group_versions) for t in settings.targets)
        )
        project, plane = (where.project, f"{where.cluster}/{where.namespace}") if where else (None, None)
        if plane is None and settings is not None and settings.control_plane is not None:
            plane = settings.control_plane_namespace
        row = FleetRow(name, origin.value, project, plane, channel, targets, tuple(problems))
        return cls(row, settings)

    @property
    def name(self) -> str:
        return self.row.name

    @property
    def origin(self) -> Origin:
        return Origin(self.row.origin)

    @property
    def problems(self) -> tuple[str, ...]:
        return self.row.problems


@dataclass(frozen=True, slots=True)
class Fleet:
    """Every client, hand-listed and discovered, and what was wrong with the instances read."""

    clients: tuple[FleetClient, ...]
    problems: tuple[FleetProblem, ...] = ()
    instances: int = 0

    @property
    def clusters(self) -> tuple[ClusterSettings, ...]:
        """The clients that can be read, as the settings' `clusters`."""
        return tuple(c.settings for c in self.clients if c.settings is not None)

    @property
    def sound(self) -> bool:
        return not self.problems and not any(c.problems for c in self.clients)


@dataclass
class _Context:
    platform: PlatformSettings
    kubeconfig: Path
    by_ref: Mapping[str, Instance]
    refinements: Mapping[str, ClusterRefinement]
    notes: list[FleetProblem] = field(default_factory=list)


def derive_fleet(
    instances: Sequence[Instance],
    platform: PlatformSettings,
    listed: Sequence[ClusterSettings],
    refinements: Sequence[ClusterRefinement],
    kubeconfig: Path,
    problems: Iterable[FleetProblem] = (),
) -> Fleet:
    """The fleet: the hand-listed clients first (as configured), then every discovered one in the order the
    platform lists them; a discovered client named like a listed one is the listed one."""
    ctx = _Context(platform, kubeconfig, {i.ref: i for i in instances}, {r.name: r for r in refinements})
    clients = [FleetClient.of(c.name, Origin.CONFIG, None, c, c.channel) for c in listed]
    taken = {c.name for c in listed}
    for instance in instances:
        client = _client(instance, ctx)
        if client is None:
            continue
        if client.name in taken:
            where = f"instance {instance.ref}"
            ctx.notes.append(
                FleetProblem(where, f"{client.name!r} is listed in clusters: that entry is used")
            )
            continue
        taken.add(client.name)
        clients.append(client)
    discovered = {c.name for c in clients if c.origin is Origin.PLATFORM}
    for refinement in refinements:
        if refinement.name not in discovered:
            # Named, not indexed: a refinement's index is not its place in clusters: (listed ones mixed in).
            what = "it refines a client of that name, and the platform lists none"
            ctx.notes.append(FleetProblem(f"the clusters: entry {refinement.name!r}", what))
    return Fleet(tuple(clients), (*problems, *ctx.notes), len(instances))


def _client(instance: Instance, ctx: _Context) -> FleetClient | None:
    if instance.values is None:
        return None  # no vcluster.yaml reported yet: nothing says it is a client
    judged = judge_vcluster_yaml(instance.values)
    if judged.proxy in (ProxyState.NOT_CONFIGURED, ProxyState.ALL_DISABLED):
        return None  # a target, or a tenant that proxies nothing
    refinement = ctx.refinements.get(instance.name)
    channel, channel_problems = _channel(instance, ctx, refinement)
    if judged.proxy is ProxyState.REFUSED:
        refused = [
            f"vCluster refuses its proxy section: {p.key}: {p.message}"
            for p in judged.problems
            if p.severity is ProblemSeverity.REFUSED
        ]
        return FleetClient.of(
            instance.name, Origin.PLATFORM, instance, None, channel, [*channel_problems, *refused]
        )
    targets, target_problems = _targets(instance, judged.routes, ctx, refinement)
    problems = [*channel_problems, *target_problems]
    if not targets:
        problems.append("no target can be probed: every entry is a wildcard; name a resource in one")
        return FleetClient.of(instance.name, Origin.PLATFORM, instance, None, channel, problems)
    match = dict(refinement.match) if refinement and refinement.match else _match(instance, ctx.platform)
    document: dict[str, Any] = {
        "name": instance.name,
        "kubeconfig": ctx.kubeconfig,
        "context": virtual_cluster_context(instance.project, instance.name),
        "match": match,
        "channel": channel,
        "targets": targets,
        "control_plane": _control_plane(instance, ctx),
    }
    if refinement is not None:
        document["escalation"] = refinement.escalation
    try:
        settings = ClusterSettings.model_validate(document)
    except ValidationError as exc:
        problems += [f"{format_loc(loc)}: {message}" for loc, message in located(exc)]
        return FleetClient.of(instance.name, Origin.PLATFORM, instance, None, channel, problems)
    return FleetClient.of(instance.name, Origin.PLATFORM, instance, settings, channel, problems)


def _match(instance: Instance, platform: PlatformSettings) -> dict[str, str]:
    """What a scrape of the client's control plane carries: its namespace (and connected cluster)."""
    match = {"namespace": instance.namespace}
    if platform.cluster_label is not None:
        match[platform.cluster_label] = instance.cluster
    return match


def _channel(
    instance: Instance, ctx: _Context, refinement: ClusterRefinement | None
) -> tuple[str | None, list[str]]:
    if refinement is not None and refinement.channel is not None:
        return refinement.channel, []
    annotated = instance.annotations.get(CHANNEL_ANNOTATION)
    if annotated is not None:
        try:
            return slack_channel(annotated), []
        except ValueError as exc:
            fallback = ctx.platform.project_channels.get(instance.project)
            return fallback, [f"annotation {CHANNEL_ANNOTATION}: {exc}"]
    return ctx.platform.project_channels.get(instance.project), []


def _control_plane(instance: Instance, ctx: _Context) -> dict[str, Any]:
    return {
        "kubeconfig": ctx.kubeconfig,
        "context": cluster_context(instance.cluster),
        "namespace": instance.namespace,
        "release": instance.release,
    }


def _targets(
    client: Instance,
    routes: Sequence[Route],
    ctx: _Context,
    refinement: ClusterRefinement | None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """One target per `targetVirtualCluster`, its group/versions in the order the entries name them."""
    by_target: dict[str, list[Route]] = {}
    for route in routes:
        by_target.setdefault(f"{route.project or client.project}/{route.target}", []).append(route)
    namespace = (refinement.probe_namespace if refinement else None) or DEFAULT_PROBE_NAMESPACE
    targets: list[dict[str, Any]] = []
    problems: list[str] = []
    for name, same in by_target.items():
        probe = next(((r.group_version, res) for r in same for res in _resources(r)), None)
        if probe is None:
            problems.append(f"target {name}: not probed: its entries are wildcards; name a resource in one")
            continue
        target: dict[str, Any] = {
            "name": name,
            "group_versions": [r.group_version for r in same],
            "probe": {"group_version": probe[0], "resource": probe[1], "namespace": namespace},
            "access_resources": "all" if any(r.access == "all" for r in same) else "owned",
        }
        instance = ctx.by_ref.get(name)
        direct = refinement.direct.get(name) if refinement else None
        if direct is not None:
            target["direct"] = direct
        elif instance is not None:
            context = virtual_cluster_context(instance.project, instance.name)
            target["direct"] = {"kubeconfig": ctx.kubeconfig, "context": context}
        if instance is not None:
            target["control_plane"] = _control_plane(instance, ctx)
        else:
            problems.append(f"target {name}: no instance the key can see; read through the client only")
        targets.append(target)
    return targets, problems


def _resources(route: Route) -> list[str]:
    """The resources a route's keys name explicitly (`widgets` of `widgets.example.com/v1`)."""
    return [key.split(".", 1)[0] for key in route.keys if not key.startswith("*.")]
