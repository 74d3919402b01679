"""What every check may use: the settings, read-only cluster readers (each opened once), live state.

The running bot hands its context the readers and live state it already has (`bot.compose`), so alerts,
`/proxy`, the buttons and the digest read every source through one reader and one `LiveState`; readers
it lacks (a target's direct access, a control plane) are opened on first use, once each. A context of
its own (the CLI) opens everything on first use, so a command touches only the clusters it needs.
`aclose()` releases what the context opened itself. TARGET arguments are resolved here, against the
configuration only.
"""

from __future__ import annotations

import asyncio
import difflib
import itertools
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bot.errors import ClusterError, InputError, shown
from bot.live import LiveState, MetricsSource
from bot.ports import Clock
from config.clusters import ClusterSettings, ControlPlaneSettings, KubeAccess, TargetSettings, replica_source
from config.settings import Settings

if TYPE_CHECKING:  # imported where a reader is opened: the digest's worker processes never open one
    from bot.clients.kube import KubeReader

# How long one read of a check waits for a cluster or Prometheus.
CHECK_TIMEOUT = 5.0
# Names offered for a mistyped TARGET.
SUGGESTED = 10


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
        known = suggested(name, [t.name for c in clusters for t in c.targets])
        raise InputError(f"TARGET: {shown(name, 80)} is not a configured target ({known})")
    return TargetRef(*found)


def suggested(name: str, known: Sequence[str], most: int = SUGGESTED) -> str:
    """The configured names to offer for a mistyped one: all of a few, else the closest `most` of them
    (difflib's similarity, then alphabetical) and how many more there are: a fleet of 5 000 targets must
    not make an answer Slack refuses."""
    if not known:
        return "configured: none you may query"
    if len(known) <= most:
        return "configured: " + ", ".join(sorted(known))
    close = difflib.get_close_matches(name, known, n=most, cutoff=0.6)
    rest = itertools.islice((k for k in sorted(known) if k not in close), most - len(close))
    return f"closest of {len(known)} configured: {', '.join([*close, *rest])}, +{len(known) - most} more"


@dataclass(frozen=True, slots=True)
class LiveSource:
    """One live-state source: a client cluster, or one addressable replica of it (`cluster/pod`)."""

    name: str
    kubeconfig: Path
    context: str | None


def live_sources(settings: Settings) -> tuple[LiveSource, ...]:
    """Every client cluster and every replica listed under its `replicas`, in configuration order."""
    sources: list[LiveSource] = []
    for cluster in settings.clusters:
        sources.append(LiveSource(cluster.name, cluster.kubeconfig, cluster.context))
        sources += [
            LiveSource(replica_source(cluster.name, pod), cluster.kubeconfig, context)
            for pod, context in cluster.replicas.items()
        ]
    return tuple(sources)


@dataclass(frozen=True)
class Unreadable:
    """A source whose kubeconfig could not be loaded: every read reports why."""

    error: ClusterError

    async def syncer_metrics(self, *, timeout: float) -> str:
        raise self.error


_Key = tuple[Path, str | None]


@dataclass
class CheckContext:
    """Cluster readers and live state for the checks of one command, or of the running bot."""

    settings: Settings
    timeout: float = CHECK_TIMEOUT
    monotonic: Clock = time.monotonic
    wall: Clock = time.time
    # The running bot's readers per live-state source, and its live state (see `bot.compose`).
    shared: Mapping[str, KubeReader] = field(default_factory=dict)
    live_state: LiveState | None = None  # None: built on first use, over this context's readers
    # One opening per kubeconfig and context: concurrent commands share it, and wait only for their own.
    _opening: dict[_Key, asyncio.Task[KubeReader]] = field(default_factory=dict)
    _starting_live: asyncio.Lock = field(default_factory=asyncio.Lock)
    _shared_by_key: dict[_Key, KubeReader] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        by_name = {s.name: (s.kubeconfig, s.context) for s in live_sources(self.settings)}
        self._shared_by_key = {by_name[name]: r for name, r in self.shared.items() if name in by_name}

    async def reader(self, name: str, kubeconfig: Path, context: str | None) -> KubeReader:
        key = (kubeconfig, context)
        shared = self._shared_by_key.get(key)
        if shared is not None:
            return shared
        opening = self._opening.get(key)
        if opening is None:
            from bot.clients.kube import KubeReader  # kubernetes' client: on first use

            opening = asyncio.create_task(KubeReader.connect(name, kubeconfig, context))
            self._opening[key] = opening
            opening.add_done_callback(lambda done: self._forget_failed(key, done))
        # Shielded: a command that stops waiting leaves the reader opening for the next one.
        return await asyncio.shield(opening)

    def _forget_failed(self, key: _Key, done: asyncio.Task[KubeReader]) -> None:
        # A kubeconfig that failed to load is tried again by the next command (it may be fixed by then).
        if (done.cancelled() or done.exception() is not None) and self._opening.get(key) is done:
            del self._opening[key]

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
        """Live proxy state of every source (the bot's, or this context's own, built on first use)."""
        async with self._starting_live:
            if self.live_state is None:
                self.live_state = await self._live_state()
            return self.live_state

    async def _live_state(self) -> LiveState:
        sources = live_sources(self.settings)
        opened = await asyncio.gather(*(self._source(s) for s in sources))
        readers = {s.name: reader for s, reader in zip(sources, opened, strict=True)}
        return LiveState(readers, timeout=self.timeout, monotonic=self.monotonic, wall=self.wall)

    async def _source(self, source: LiveSource) -> MetricsSource:
        try:
            return await self.reader(source.name, source.kubeconfig, source.context)
        except ClusterError as err:
            return Unreadable(err)

    async def aclose(self) -> None:
        """Close the readers this context opened (the shared ones belong to whoever opened them)."""
        opening, self._opening = list(self._opening.values()), {}
        for task in opening:
            task.cancel()
        for outcome in await asyncio.gather(*opening, return_exceptions=True):
            if not isinstance(outcome, BaseException):
                await outcome.close()
