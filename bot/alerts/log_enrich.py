"""Alert enrichment from the client control plane's logs: one notification's reads, started together with
the live reads and collected when the enrichment budget ends (what is late is marked, never waited for).

One read per client cluster whose `control_plane` is configured (its pods' last lines; shared by every
alert of that cluster, and for a few seconds with the next notification: `ControlPlaneLogReader`), then
matched per alert target in pure code (`bot.checks.logs.evidence_for`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Iterable
from typing import Protocol

from bot.alerts.budget import in_hand, within_budget
from bot.domain.enrichment import Unavailable
from bot.domain.log_reference import LogEvidence
from bot.reads.context import TargetRef
from bot.reads.control_plane_logs import ControlPlaneLogs, evidence_for
from config.clusters import ClusterSettings
from config.settings import Settings

log = logging.getLogger(__name__)


class LogSource(Protocol):
    """Where the alerts read control-plane logs (`bot.checks.logs.ControlPlaneLogReader` is one)."""

    async def read(self, cluster: ClusterSettings) -> ControlPlaneLogs: ...

    def ready(self, cluster: ClusterSettings) -> ControlPlaneLogs | None:
        """What `read` would return without waiting (a fresh shared read), else None."""

    async def cancel_pending(self) -> None: ...


class LogRound:
    """The log reads of one notification: `start`, await `tasks` within the budget, `collect`, `evidence`."""

    def __init__(self, source: LogSource | None, settings: Settings, budget: float) -> None:
        self._source = source
        self._settings = settings
        self._budget = budget
        self._tasks: dict[str, asyncio.Future[ControlPlaneLogs]] = {}
        self._outcomes: dict[str, ControlPlaneLogs | Unavailable] = {}

    @property
    def tasks(self) -> list[asyncio.Future[ControlPlaneLogs]]:
        return list(self._tasks.values())

    def start(self, clusters: Iterable[str]) -> None:
        """One read per named cluster whose control plane is configured."""
        if self._source is None:
            return
        for name in clusters:
            cluster = self._settings.cluster(name)
            if cluster is None or cluster.control_plane is None or name in self._tasks:
                continue
            read = functools.partial(self._source.read, cluster)
            self._tasks[name] = in_hand(self._source.ready(cluster), read, f"logs-{name}")

    def collect(self) -> None:
        """The budget is over: keep what arrived, mark the rest late (the shared read goes on)."""
        for name, task in self._tasks.items():
            got = within_budget(task, self._budget)
            if isinstance(got, Unavailable) and got.error is not None:
                log.warning("log enrichment of %s failed: %s", name, got.error)
            self._outcomes[name] = got
            if not task.done():
                task.cancel()

    def evidence(
        self, cluster: str | None, target: str | None, group_version: str | None = None
    ) -> LogEvidence | Unavailable | None:
        """What the logs say about one alert's target (and its group/version, when the alert names one:
        lines of the target's other group/versions belong to their own alerts); None when not read."""
        if cluster is None or target is None or cluster not in self._outcomes:
            return None
        settings = self._settings.cluster(cluster)
        configured = None if settings is None else settings.target(target)
        if settings is None or configured is None:
            return None  # a target this cluster does not proxy to: its lines would say nothing of it
        got = self._outcomes[cluster]
        if isinstance(got, Unavailable):
            return got
        return evidence_for(got, TargetRef(settings, configured), group_version)
