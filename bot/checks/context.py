"""What every check may use: the settings, read-only cluster readers (opened once), live state.

Readers are opened lazily and cached per kubeconfig and context, so a command touches only the clusters
it needs; `aclose()` releases them. TARGET arguments are resolved here, against the configuration only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bot.clients.kube import KubeReader
from bot.errors import ClusterError, InputError
from bot.live import LiveState, MetricsSource
from config.settings import (
    ClusterSettings,
    ControlPlaneSettings,
    KubeAccess,
    Settings,
    TargetSettings,
    replica_source,
)

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class TargetRef:
    """A configured target and the client cluster that proxies to it."""

    cluster: ClusterSettings
    target: TargetSettings

    @property
    def name(self) -> str:
        return self.target.name


def resolve_target(
    settings: Settings, name: str, visible: Iterable[ClusterSettings] | None = None
) -> TargetRef:
    """The configured target called `name`; anything else is refused, listing the targets of `visible`
    (default: every cluster; `/proxy` passes only those the asker may query, so none is disclosed).
    """
    found = settings.find_target(name)
    if found is None:
        clusters = settings.clusters if visible is None else visible
        known = ", ".join(sorted(t.name for c in clusters for t in c.targets)) or "none you may query"
        shown = name if len(name) <= 80 else name[:80] + "…"
        raise InputError(f"TARGET: {shown!r} is not a configured target (configured: {known})")
    return TargetRef(*found)


@dataclass(frozen=True)
class _Unreadable:
    """A cluster whose kubeconfig could not be loaded: every read reports why."""

    error: ClusterError

    async def syncer_metrics(self, *, timeout: float) -> str:
        raise self.error


@dataclass
class CheckContext:
    """Shared, lazily opened clients for the checks of one command (or of the running bot)."""

    settings: Settings
    timeout: float = 5.0
    monotonic: Clock = time.monotonic
    wall: Clock = time.time
    _readers: dict[tuple[Path, str | None], KubeReader] = field(default_factory=dict)
    _live: LiveState | None = None
    # The running bot shares one context across concurrent commands: two must not open (and leak) the
    # same reader twice, or build live state twice.
    _opening: asyncio.Lock = field(default_factory=asyncio.Lock)
    _starting_live: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def reader(self, name: str, kubeconfig: Path, context: str | None) -> KubeReader:
        key = (kubeconfig, context)
        async with self._opening:
            if key not in self._readers:
                self._readers[key] = await KubeReader.connect(name, kubeconfig, context)
            return self._readers[key]

    async def client(self, cluster: ClusterSettings) -> KubeReader:
        """The client tenant cluster's API (where the proxy runs)."""
        return await self.reader(cluster.name, cluster.kubeconfig, cluster.context)

    async def direct(self, ref: TargetRef) -> KubeReader | None:
        """The target tenant cluster's own API, when configured."""
        access: KubeAccess | None = ref.target.direct
        if access is None:
            return None
        return await self.reader(ref.target.tenant_name, access.kubeconfig, access.context)

    async def control_plane(self, name: str, access: ControlPlaneSettings) -> KubeReader:
        """The control plane cluster, as configured for one tenant."""
        return await self.reader(f"control plane of {name}", access.kubeconfig, access.context)

    async def live(self) -> LiveState:
        """Live proxy state of every configured client cluster (readers opened on first use)."""
        async with self._starting_live:
            return await self._live_state()

    async def _live_state(self) -> LiveState:
        if self._live is None:
            readers: dict[str, MetricsSource] = {}
            for cluster in self.settings.clusters:
                contexts = {cluster.name: cluster.context}
                contexts |= {replica_source(cluster.name, pod): c for pod, c in cluster.replicas.items()}
                for source, context in contexts.items():
                    try:
                        readers[source] = await self.reader(source, cluster.kubeconfig, context)
                    except ClusterError as err:
                        readers[source] = _Unreadable(err)
            self._live = LiveState(readers, timeout=self.timeout, monotonic=self.monotonic, wall=self.wall)
        return self._live

    async def aclose(self) -> None:
        for reader in self._readers.values():
            await reader.close()
        self._readers.clear()
