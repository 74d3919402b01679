"""Alert enrichment from the instances' change history: what changed on an alert's client and target within
the window before it fired (`bot.domain.changes.ChangeReport`), read from the store within the enrichment
budget. A history that cannot be read is said in the report, never raised and never waited for past the
budget: the post goes out without it.

The store is read once per instance for every alert of the next few seconds (`ChangeHistory`): a history
changes at most once per `platform.refresh`, and a storm's alerts share their ends.

An end is a platform instance, `<project>/<name>`: the target is the alert's `target` label; the client is
the instance a discovered client's settings read through (`instance_ref`); a client listed by hand in
`clusters:` is no platform instance, and has no history.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Iterable, Sequence

from bot.alerts.budget import in_hand, within_budget
from bot.domain.changes import WINDOW_SECONDS, ChangeReport, EndHistory, InstanceVersion
from bot.domain.enrichment import Unavailable
from bot.domain.messages import AlertGroupView
from bot.ports import Clock
from bot.shared_reads import SharedReads
from bot.store.base import ChangeStore
from config.clusters import ClusterSettings
from config.settings import Settings

log = logging.getLogger(__name__)
# How long one read of an instance's history serves the alerts after it (seconds).
HISTORY_TTL = 5.0
# A discovered client's context names its instance (`bot.fleet.access.virtual_cluster_context`).
_CONTEXT = ("project", "virtualcluster")


def instance_ref(cluster: ClusterSettings) -> str | None:
    """The platform instance a client's settings read through, `<project>/<name>`; None for a client whose
    context is not a platform virtual cluster's (one listed by hand)."""
    parts = (cluster.context or "").split("/")
    if len(parts) != 4 or (parts[0], parts[2]) != _CONTEXT or not parts[1] or not parts[3]:
        return None
    return f"{parts[1]}/{parts[3]}"


class ChangeHistory:
    """The instances' kept histories as alerts read them: one store read per instance serves every alert
    for `ttl` seconds (every version kept: the window is the report's to apply)."""

    def __init__(
        self, store: ChangeStore, platform: str, ttl: float = HISTORY_TTL, monotonic: Clock = time.monotonic
    ) -> None:
        self._store = store
        self._platform = platform
        self._reads: SharedReads[str, list[InstanceVersion]] = SharedReads(ttl, monotonic)

    async def read(self, instance: str) -> list[InstanceVersion]:
        history = functools.partial(self._store.instance_history, self._platform, instance, 0.0)
        return await self._reads.get(instance, history, name=f"changes-read-{instance}")

    def ready(self, instance: str) -> list[InstanceVersion] | None:
        """What `read` returns without waiting (read in the last `ttl` seconds), else None."""
        return self._reads.peek(instance)

    async def cancel_pending(self) -> None:
        await self._reads.cancel_pending()


class ChangeRound:
    """The history reads of one notification: `start` them with the other reads, await `tasks` within the
    budget, `collect`, then one `report` per alert group (`group_report`)."""

    def __init__(
        self, history: ChangeHistory | None, budget: float, window: float = WINDOW_SECONDS, every: float = 0.0
    ) -> None:
        self._history = history
        self._budget = budget
        self.window = window
        self.every = every  # how often the platform is read (`platform.refresh`)
        self._tasks: dict[str, asyncio.Future[list[InstanceVersion]]] = {}
        self._outcomes: dict[str, list[InstanceVersion] | Unavailable] = {}

    @property
    def tasks(self) -> list[asyncio.Future[list[InstanceVersion]]]:
        return list(self._tasks.values())

    def start(self, instances: Iterable[str | None]) -> None:
        """One read per instance (None, a client listed by hand, has none), in hand when read just now."""
        if self._history is None:
            return
        for ref in instances:
            if ref is not None and ref not in self._tasks:
                read = functools.partial(self._history.read, ref)
                self._tasks[ref] = in_hand(self._history.ready(ref), read, f"changes-{ref}")

    def collect(self) -> None:
        """The budget is over: keep what arrived, mark the rest late (the shared read goes on, for the next
        alert)."""
        for ref, task in self._tasks.items():
            got = within_budget(task, self._budget)
            if isinstance(got, Unavailable) and got.error is not None:
                log.warning("change history of %s not read: %s", ref, got.error)
            self._outcomes[ref] = got
            if not task.done():
                task.cancel()

    def report(self, ends: Sequence[str | None], fired_at: float) -> ChangeReport | None:
        """The changes before `fired_at` on these ends (a None end, a client listed by hand, is left out);
        None when no history is read at all (no platform)."""
        if self._history is None:
            return None
        histories: list[EndHistory] = []
        for ref in dict.fromkeys(e for e in ends if e is not None):
            got = self._outcomes.get(ref)
            if got is None:
                histories.append(EndHistory(ref, unreadable="not read"))
            elif isinstance(got, Unavailable):
                histories.append(EndHistory(ref, unreadable=_why(got)))
            else:
                histories.append(EndHistory(ref, tuple(got)))
        if histories and all(h.unreadable is not None for h in histories):
            return ChangeReport.failed(fired_at, histories[0].unreadable or "", self.window)
        return ChangeReport(fired_at, self.window, tuple(histories), every=self.every)


def group_ends(settings: Settings, view: AlertGroupView) -> list[str | None]:
    """A group's ends: its client's instance (None: listed by hand, or several clients), then each target
    its alerts name, in order."""
    client = settings.cluster(view.cluster) if view.cluster is not None else None
    targets = dict.fromkeys(t for a in view.alerts if (t := a.target) is not None)
    return [instance_ref(client) if client is not None else None, *targets]


def group_report(changes: ChangeRound, settings: Settings, view: AlertGroupView) -> ChangeReport | None:
    """What changed before the group's first alert fired, on its ends (read by `changes` already)."""
    return changes.report(group_ends(settings, view), view.started_at.timestamp())


def _why(got: Unavailable) -> str:
    if got.late:
        return f"the store did not answer within {got.budget:g} s"
    if got.error is not None:
        return f"the store failed: {type(got.error).__name__}"
    return "the read was cancelled"


async def change_report(
    history: ChangeHistory | None,
    ends: Sequence[str | None],
    fired_at: float,
    *,
    budget: float,
    window: float = WINDOW_SECONDS,
) -> ChangeReport | None:
    """One alert's report on its own: its ends' histories read within `budget` seconds. Never raises; None
    when no history is read at all (no platform)."""
    changes = ChangeRound(history, budget, window)
    changes.start(ends)
    pending = [task for task in changes.tasks if not task.done()]
    if pending:
        await asyncio.wait(pending, timeout=budget)
    changes.collect()
    return changes.report(ends, fired_at)
