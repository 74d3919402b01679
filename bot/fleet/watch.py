"""The platform's fleet kept current while `serve` runs: read at start, then every `platform.refresh`.

Each reading is kept in the store (`fleet_readings`, one row per platform): a start while the platform is
unreachable serves the last one kept (logged with its age), and replicas sharing the store serve the same.
Its instances whose proxy's facts changed get a new version in their history (`bot.fleet.history`), which
alerts tell of.
At start, a key the platform refuses (401, 403) stops `serve` (exit 2, naming `platform.url` and the
status), as does an unreachable platform with no reading kept. Afterwards a
failed refresh keeps the last fleet and is logged with how long the platform has been unreachable;
`changed()` returns once a refresh finds other clients or targets than the fleet being served, and `serve`
rebuilds the bot over it. What the fleet says of itself (a client refused, an instance malformed) is
`current`, which `/proxy fleet` shows without a rebuild.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime

from bot.domain.fleet import FleetHealth
from bot.errors import PlatformError
from bot.fleet.derive import Fleet
from bot.fleet.history import HistoryRecorder
from bot.fleet.reading import FleetReader
from bot.store import Store, StoreError, open_store
from config.fields import LocatedProblems
from config.settings import Settings

log = logging.getLogger(__name__)
# The platform's answers that say the key is wrong: never served around with a stored fleet.
REFUSALS = (401, 403)


class FleetWatch:
    """The fleet of one `serve`: its first reading, its refreshes, the reader's files."""

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.time) -> None:
        self.reader = FleetReader(settings)
        self._clock = clock  # the time readings and failures are stamped with (the demo's: simulated)
        self.store: Store | None = None
        self.settings = settings
        self.refresh = self.reader.platform.refresh
        self.current: Fleet | None = None
        self.failing_since: float | None = None
        self.read_at: float | None = None  # the reading being served
        self._history: HistoryRecorder | None = None  # made with the store, at the first reading

    async def first(self) -> Fleet:
        self.store = await open_store(self.settings.store.url.get_secret_value(), clock=self._clock)
        try:
            fleet = await self._read()
        except PlatformError as err:
            if err.status in REFUSALS:
                raise
            stored = await self.store.last_fleet_reading(self._url)
            if stored is None:
                kept = f"{err.message}; and no fleet read earlier is kept"
                raise PlatformError(self._url, err.status, kept) from None
            self.failing_since = self._clock()
            when = datetime.fromtimestamp(stored.read_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
            log.warning("fleet: the platform cannot be read (%s); serving the fleet as read %s", err, when)
            fleet = self.reader.derive(stored.prefix, json.loads(stored.instances))
            self.read_at = stored.read_at
        settled = self._settled(fleet)
        log.info("fleet: %d clients from %s (%d instances)", len(settled.clients), self._url, fleet.instances)
        return settled

    async def changed(self) -> Fleet:
        """The next fleet whose clients or targets differ from the one being served."""
        served = self.current.clusters if self.current is not None else ()
        while True:
            await asyncio.sleep(self.refresh)
            try:
                fleet = self._settled(await self._read())
            except (PlatformError, LocatedProblems) as err:
                since = self.failing_since = self.failing_since or self._clock()
                log.warning("fleet: kept as read last; unreadable for %.0f s: %s", self._clock() - since, err)
                continue
            if self.failing_since is not None:
                log.info("fleet: the platform answers again")
                self.failing_since = None
            if fleet.clusters != served:
                log.info("fleet: changed (%d clients now); the bot is rebuilt over it", len(fleet.clusters))
                return fleet

    async def aclose(self) -> None:
        if self.store is not None:
            await self.store.close()
        await self.reader.aclose()
        shutil.rmtree(self.reader.directory, ignore_errors=True)

    @property
    def _url(self) -> str:
        return self.reader.platform.url

    async def _read(self) -> Fleet:
        """A reading of the platform, kept in the store before it is served."""
        prefix, listed = await self.reader.fetch()
        fleet = self.reader.derive(prefix, listed)
        if self.store is not None:
            await self.store.save_fleet_reading(self._url, prefix, json.dumps(listed))
            await self._record(prefix, listed)
        self.read_at = self._clock()
        return fleet

    async def _record(self, prefix: str, listed: object) -> None:
        """The reading's changes kept as the instances' history; a store that fails it costs the history
        this one change, never the reading."""
        assert self.store is not None
        if self._history is None:
            self._history = HistoryRecorder(self.store, self._url)
        try:
            recorded = await self._history.record(prefix, listed)
        except StoreError as err:
            log.warning("fleet: the instances' history is not recorded this time: %s", err)
            return
        if recorded:
            log.info("fleet: a new version of %d instances: %s", len(recorded), ", ".join(recorded[:10]))

    def health(self) -> FleetHealth:
        """How the platform answers, for `/metrics` and the digest."""
        clients = self.current.clients if self.current is not None else ()
        read = sum(1 for c in clients if c.settings is not None)
        return FleetHealth(self._url, self.read_at, self.failing_since, read, len(clients) - read)

    def _settled(self, fleet: Fleet) -> Fleet:
        """The fleet, its settings checked as the file's are (a name listed twice raises)."""
        self.settings.with_fleet(fleet.clusters)
        self.current = fleet
        return fleet
