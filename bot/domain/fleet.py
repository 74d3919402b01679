"""The fleet as the bot sees it, as a neutral result: each client, where it came from, what is wrong.

Built by `bot/fleet/report.py` (from the platform's reading, or the configuration alone), shown by
`bot/render/fleet.py` for `proxybot fleet` and `/proxy fleet`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class FleetTarget:
    name: str
    group_versions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FleetRow:
    """One client: its origin (`platform` or `config`), project, control plane, channel, targets, problems."""

    name: str
    origin: str
    project: str | None
    control_plane: str | None
    channel: str | None
    targets: tuple[FleetTarget, ...]
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FleetReport:
    """The fleet read now (or the reason it could not be read: `error`)."""

    rows: tuple[FleetRow, ...]
    problems: tuple[str, ...] = ()  # the fleet's own (an instance malformed, a refinement of nothing)
    platform: str | None = None  # the platform's URL, when the fleet comes from one
    instances: int = 0
    error: str | None = None
    hidden: int = 0  # clients the asker may not query, left out

    @property
    def read(self) -> bool:
        return self.error is None

    @property
    def sound(self) -> bool:
        return self.read and not self.problems and not any(row.problems for row in self.rows)

    @property
    def verdict(self) -> str:
        if not self.read:
            return "unreadable"
        return "sound" if self.sound else "problems"

    def as_dict(self) -> dict[str, Any]:
        return {"check": "fleet", "passed": self.sound, "verdict": self.verdict, **asdict(self)}


@dataclass(frozen=True, slots=True)
class FleetHealth:
    """How the platform the fleet comes from answers: when it was last read, since when it fails."""

    platform: str
    read_at: float | None  # the reading being served (a kept one's time when the platform failed at start)
    failing_since: float | None  # None: the last refresh succeeded
    clients: int  # the clients read
    unread: int = 0  # the clients listed that cannot be read (vCluster refuses them, or no target probed)

    @property
    def up(self) -> bool:
        return self.failing_since is None
