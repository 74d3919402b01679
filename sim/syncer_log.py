"""The log of one client control-plane process (the syncer), as the proxy inside it writes it.

Records are kept in simulated seconds; `sim.kube.pod_logs` renders them as the kubelet serves a container
log (vCluster's console format: date, level, caller, message, then the fields as JSON). A restarted
replica is a new process with a new, empty log, as `kubectl logs` shows the current container's log.
The messages the vendor's log reference explains are the constants below, word for word.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sim.clock import Clock

# The vendor's log reference (its message substrings, completed as vCluster writes them).
STARTING_PROXY = "Starting proxy server"
STARTING_TRANSPORT = "Starting target transport"
STARTUP_SYNC_TIMEOUT = (
    "peer cache did not sync in time for the startup probe, requests fail with 503 until the first "
    "netmap arrives"
)
INITIAL_PROBE_FAILED = "initial probe of proxy target failed, requests will keep retrying"
QUARANTINING = "quarantining proxy target peer host after consecutive dial failures"
ALL_QUARANTINED = (
    "all peer hosts for the proxy target are quarantined; requests fail fast with 503 until a peer "
    "becomes dialable"
)
WATCH_DOWN = (
    "peer watch subscription is down and no fresh netmap is available; requests to the target fail "
    "with 503 until it recovers"
)
CREATING_NAMESPACE = "creating namespace on target cluster"

# A log rotates: the kubelet keeps a bounded file per container.
MAX_RECORDS = 20_000
FieldValue = str | int


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One log entry: when (simulated seconds), level, the Go caller, the message and its fields."""

    at: float
    level: str
    caller: str
    message: str
    fields: tuple[tuple[str, FieldValue], ...] = ()


class SyncerLog:
    """The records one process wrote, oldest first, bounded like a rotated container log."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.records: deque[LogRecord] = deque(maxlen=MAX_RECORDS)

    def info(self, caller: str, message: str, fields: Mapping[str, FieldValue] | None = None) -> None:
        self._write("INFO", caller, message, fields)

    def error(self, caller: str, message: str, fields: Mapping[str, FieldValue] | None = None) -> None:
        self._write("ERROR", caller, message, fields)

    def _write(self, level: str, caller: str, message: str, fields: Mapping[str, FieldValue] | None) -> None:
        items = tuple(({"component": "vcluster"} | dict(fields or {})).items())
        self.records.append(LogRecord(self._clock.now(), level, caller, message, items))

    def messages(self) -> Iterable[str]:
        return (record.message for record in self.records)


def go_duration(seconds: float) -> str:
    """Seconds as Go's `time.Duration` prints them, to the second: `45s`, `2m1s`, `1h0m5s`."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"
