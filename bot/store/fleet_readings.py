"""SQL for the last fleet read from each platform (`bot.fleet.watch`): the management API's list of
VirtualClusterInstances as it answered, the project namespace prefix it was read with, and when. One row
per platform URL, replaced by each reading: a restart while the platform is unreachable serves it, and
every replica sharing the store reads the same one. Statements are written once with `?` parameters.
"""

from __future__ import annotations

from bot.store.models import FleetReading
from bot.store.steps import Steps, first_of, read, write

SAVE = """
INSERT INTO fleet_readings (platform, prefix, instances, read_at) VALUES (?, ?, ?, ?)
ON CONFLICT (platform) DO UPDATE SET prefix = excluded.prefix, instances = excluded.instances,
    read_at = excluded.read_at
"""
LAST = "SELECT prefix, instances, read_at FROM fleet_readings WHERE platform = ?"


def save(platform: str, prefix: str, instances: str, at: float) -> Steps[None]:
    yield write(SAVE, (platform, prefix, instances, at))


def last(platform: str) -> Steps[FleetReading | None]:
    found = yield from first_of(
        read(LAST, (platform,)), lambda row: FleetReading(str(row[0]), str(row[1]), float(row[2]))
    )
    return found
