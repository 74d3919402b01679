"""SQL for the lifecycle of alert groups per Slack channel: the statements and operations both backends run.

A group's facts and a storm's record are kept as JSON in the `details` column, in the shape proxybot has
always written there (group: `last_notification`, `last_id`, `storm`, `storm_count`, `alert_labels`, `worst`,
and since incidents `cause`, `incident`, `members`, `alerts`, `flaps`, then `resolved_seen` as
`[[fingerprint, startsAt, endsAt, seen_at], ...]` the least recently seen first, then `impact` (the
episode's own readings: `last`, `sources`, `failed` as `[[code, reason, count], ...]`, `resets`, `peak_q`,
`peak_u`, `readings`); storm row: `kind: "storm"`,
`started_at`, `last_new_at`, `ended_at`, `posted`, `entries`, later `table` and `refreshed_at`; an entry
`[name, severity, target, cluster]`, later with `since` and `ended`), so a store kept across an upgrade loads
as it was. Both backends share these codecs: a new fact is a new JSON key, never a schema migration.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from bot.domain.alert_summary import WorstSeen
from bot.domain.alerts import AlertStatus
from bot.domain.findings import Severity
from bot.domain.impact import ImpactTally
from bot.domain.incident import Cause, CauseKey, Flaps
from bot.domain.stale import Ended, SeenResolved
from bot.domain.storm import StormEntry
from bot.store.models import AlertGroupState, GroupFacts, StormRecord, StormShare
from bot.store.notifications import MARK_PROCESSED
from bot.store.steps import Steps, first_of, read, rows_of, write

COLUMNS = (
    "channel, group_key, status, ts, first_firing_at, resolved_at, firing_fingerprints, details, updated_at,"
    " channel_id"
)

UPSERT = f"""
INSERT INTO alert_groups ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (channel, group_key) DO UPDATE SET
    status = excluded.status, ts = COALESCE(excluded.ts, alert_groups.ts),
    channel_id = COALESCE(excluded.channel_id, alert_groups.channel_id),
    first_firing_at = excluded.first_firing_at,
    resolved_at = excluded.resolved_at, firing_fingerprints = excluded.firing_fingerprints,
    details = excluded.details, updated_at = excluded.updated_at
"""  # noqa: S608 - column names are constants of this module, values are bound parameters

# The delivery side's write: only the message's address, whatever the alert side saved. The first address
# stays: a late write from a replica that lost the lease must not point the group at a duplicate.
RECORD_POST = """
INSERT INTO alert_groups
    (channel, group_key, status, ts, firing_fingerprints, details, updated_at, channel_id)
VALUES (?, ?, 'firing', ?, '[]', '{}', ?, ?)
ON CONFLICT (channel, group_key) DO UPDATE SET
    ts = excluded.ts, channel_id = excluded.channel_id, updated_at = excluded.updated_at
WHERE alert_groups.ts IS NULL
"""


GET = f"SELECT {COLUMNS} FROM alert_groups WHERE channel = ? AND group_key = ?"  # noqa: S608
# The casts give PostgreSQL a type for a parameter that may be NULL; SQLite ignores them.
LISTING = (
    f"SELECT {COLUMNS} FROM alert_groups"  # noqa: S608
    " WHERE (CAST(? AS TEXT) IS NULL OR channel = ?) AND (CAST(? AS TEXT) IS NULL OR status = ?)"
    " ORDER BY updated_at, channel, group_key"
)
# The groups firing now that have a message of their own: not a storm's row, nor a digest's (whose rows
# the delivery side makes, with no first firing time), oldest first.
FIRING_POSTS = (
    f"SELECT {COLUMNS} FROM alert_groups"  # noqa: S608
    " WHERE status = 'firing' AND ts IS NOT NULL AND first_firing_at IS NOT NULL"
    " AND group_key NOT LIKE 'storm:%'"
    " ORDER BY first_firing_at, channel, group_key"
)
# Every firing message: the groups' with a message of their own and the storm summaries.
FIRING_MESSAGES = (
    f"SELECT {COLUMNS} FROM alert_groups"  # noqa: S608
    " WHERE status = 'firing' AND ts IS NOT NULL AND first_firing_at IS NOT NULL"
    " ORDER BY first_firing_at, channel, group_key"
)
CHANNEL_ID = "SELECT channel_id FROM alert_groups WHERE channel = ? AND channel_id IS NOT NULL LIMIT 1"


def get(channel: str, group_key: str) -> Steps[AlertGroupState | None]:
    return (yield from first_of(read(GET, (channel, group_key)), group_from_row))


def save(state: AlertGroupState, now: float, *, closing: int | None = None) -> Steps[AlertGroupState]:
    """Upsert a group (and, with `closing`, close that notification in the same transaction). A message
    `ts` (and channel ID) once stored is kept when `state.ts` is None: the pipeline may save a state it
    read before the delivery worker stored the ts of the post it just made."""
    saved = replace(state, firing_fingerprints=frozenset(state.firing_fingerprints), updated_at=now)
    yield write(UPSERT, group_row(saved, now))
    if closing is not None:
        yield write(MARK_PROCESSED, (now, closing))
    return saved


def record_post(channel: str, group_key: str, ts: str, channel_id: str, now: float) -> Steps[None]:
    """Store where the group's message is (a row is made when the alert side saved none yet)."""
    yield write(RECORD_POST, (channel, group_key, ts, now, channel_id))


def listing(channel: str | None, status: AlertStatus | None) -> Steps[list[AlertGroupState]]:
    value = None if status is None else status.value
    return (yield from rows_of(read(LISTING, (channel, channel, value, value)), group_from_row))


def firing_posts() -> Steps[list[AlertGroupState]]:
    return (yield from rows_of(read(FIRING_POSTS), group_from_row))


def firing_messages() -> Steps[list[AlertGroupState]]:
    return (yield from rows_of(read(FIRING_MESSAGES), group_from_row))


def channel_id_of(channel: str) -> Steps[str | None]:
    return (yield from first_of(read(CHANNEL_ID, (channel,)), lambda row: str(row[0])))


def group_row(state: AlertGroupState, now: float) -> tuple[Any, ...]:
    return (
        state.channel,
        state.group_key,
        state.status.value,
        state.ts,
        state.first_firing_at,
        state.resolved_at,
        json.dumps(sorted(state.firing_fingerprints)),
        json.dumps(_details(state), sort_keys=True),
        now,
        state.channel_id,
    )


def group_from_row(row: tuple[Any, ...]) -> AlertGroupState:
    channel, group_key, status, ts, first_firing_at, resolved_at, fingerprints, details, updated_at = row[:9]
    stored = json.loads(details)
    return AlertGroupState(
        channel=channel,
        group_key=group_key,
        status=AlertStatus(status),
        ts=ts,
        first_firing_at=first_firing_at,
        resolved_at=resolved_at,
        firing_fingerprints=frozenset(json.loads(fingerprints)),
        facts=_facts(stored, group_key),
        storm=_storm(stored),
        updated_at=updated_at,
        channel_id=row[9],
    )


# -- the details column ------------------------------------------------------------------------------


def _details(state: AlertGroupState) -> dict[str, Any]:
    if state.storm is not None:
        return _storm_json(state.storm)
    facts, found = state.facts, dict[str, Any]()
    if facts.last_notification is not None:
        found["last_notification"] = facts.last_notification
    if facts.last_notification_id is not None:
        found["last_id"] = facts.last_notification_id
    if facts.storm_thread is not None:
        found["storm"] = facts.storm_thread
    if facts.storm_share is not None:
        share = facts.storm_share
        found["storm_count"] = {"storm": share.storm, "entries": [_entry_json(e) for e in share.entries]}
    if facts.firing_labels:
        found["alert_labels"] = [dict(labels) for labels in facts.firing_labels]
    if facts.worst_seen is not None:
        found["worst"] = [int(facts.worst_seen.severity), facts.worst_seen.what]
    if facts.held_message is not None:
        found["held_message"] = dict(facts.held_message)
    return found | _incident_json(facts)


def _incident_json(facts: GroupFacts) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if facts.cause is not None:
        key = facts.cause
        found["cause"] = {"cluster": key.cluster, "target": key.target, "cause": key.cause.value}
    if facts.incident is not None:
        found["incident"] = facts.incident
    if facts.members:
        found["members"] = list(facts.members)
    if facts.alerts:
        found["alerts"] = [dict(alert) for alert in facts.alerts]
    if facts.flaps != Flaps():
        found["flaps"] = {"refired_at": list(facts.flaps.refired_at), "noted_at": facts.flaps.noted_at}
    if facts.seen_resolved.alerts:
        found["resolved_seen"] = [
            [fp, e.starts_at.isoformat(), None if e.ends_at is None else e.ends_at.isoformat(), e.seen_at]
            for fp, e in facts.seen_resolved.alerts.items()
        ]
    if facts.impact is not None:
        found["impact"] = _impact_json(facts.impact)
    return found


def _impact_json(tally: ImpactTally) -> dict[str, Any]:
    return {
        "last": dict(tally.last),
        "sources": sorted(tally.sources),
        "failed": [[code, reason, n] for (code, reason), n in sorted(tally.failed.items())],
        "resets": tally.resets,
        "peak_q": tally.peak_quarantined,
        "peak_u": tally.peak_unsynced,
        "readings": tally.readings,
    }


def _impact(raw: Any) -> ImpactTally | None:
    if not isinstance(raw, dict):
        return None
    try:
        return ImpactTally(
            last={str(k): float(v) for k, v in dict(raw.get("last") or {}).items()},
            sources=frozenset(str(s) for s in raw.get("sources") or ()),
            failed={(str(c), str(r)): float(n) for c, r, n in raw.get("failed") or ()},
            resets=int(raw.get("resets") or 0),
            peak_quarantined=float(raw.get("peak_q") or 0.0),
            peak_unsynced=int(raw.get("peak_u") or 0),
            readings=int(raw.get("readings") or 0),
        )
    except (TypeError, ValueError):
        return None  # written by a proxybot that kept it otherwise: the episode's tally starts again


def _storm_json(storm: StormRecord) -> dict[str, Any]:
    return {
        "kind": "storm",
        "started_at": storm.started_at,
        "last_new_at": storm.last_new_at,
        "ended_at": storm.ended_at,
        "entries": {key: [_entry_json(e) for e in entries] for key, entries in storm.entries.items()},
        "posted": storm.posted,
    } | {k: v for k, v in (("table", storm.table), ("refreshed_at", storm.refreshed_at)) if v is not None}


def _facts(details: Mapping[str, Any], group_key: str) -> GroupFacts:
    if details.get("kind") == "storm":
        return GroupFacts()
    last, thread = details.get("last_notification"), details.get("storm")
    return GroupFacts(
        last_notification=last if isinstance(last, str) else None,
        last_notification_id=last_id if isinstance(last_id := details.get("last_id"), int) else None,
        storm_thread=thread if isinstance(thread, str) else None,
        storm_share=_share(details.get("storm_count"), group_key),
        firing_labels=_label_sets(details.get("alert_labels")),
        worst_seen=_worst(details.get("worst")),
        cause=_cause(details.get("cause")),
        incident=incident if isinstance(incident := details.get("incident"), str) else None,
        members=_strings(details.get("members")),
        alerts=_dicts(details.get("alerts")),
        flaps=_flaps(details.get("flaps")),
        seen_resolved=_seen_resolved(details.get("resolved_seen")),
        impact=_impact(details.get("impact")),
        held_message=held if isinstance(held := details.get("held_message"), dict) else None,
    )


def _worst(raw: Any) -> WorstSeen | None:
    if not (isinstance(raw, list) and len(raw) == 2 and isinstance(raw[0], int) and isinstance(raw[1], str)):
        return None
    try:
        return WorstSeen(Severity(raw[0]), raw[1])
    except ValueError:
        return None


def _cause(raw: Any) -> CauseKey | None:
    if not isinstance(raw, dict):
        return None
    cluster, target, cause = raw.get("cluster"), raw.get("target"), raw.get("cause")
    if not (isinstance(cluster, str) and isinstance(target, str) and cause in _CAUSES):
        return None  # written by a version that knew another cause: no incident to join
    return CauseKey(cluster, target, Cause(cause))


_CAUSES = frozenset(c.value for c in Cause)


def _dicts(raw: Any) -> tuple[Mapping[str, Any], ...]:
    return tuple(item for item in raw if isinstance(item, dict)) if isinstance(raw, list) else ()


def _strings(raw: Any) -> tuple[str, ...]:
    return tuple(item for item in raw if isinstance(item, str)) if isinstance(raw, list) else ()


def _flaps(raw: Any) -> Flaps:
    if not isinstance(raw, dict):
        return Flaps()
    times = tuple(float(t) for t in raw.get("refired_at", ()) if isinstance(t, int | float))
    noted = raw.get("noted_at")
    return Flaps(times, float(noted) if isinstance(noted, int | float) else None)


def _seen_resolved(raw: Any) -> SeenResolved:
    found: dict[str, Ended] = {}
    for item in raw if isinstance(raw, list) else ():
        ended = _ended(item)
        if ended is not None:
            found[item[0]] = ended
    return SeenResolved(found)


def _ended(item: Any) -> Ended | None:
    # An entry of another shape (written by a later version) is left out: at worst a stale copy applies.
    if not (isinstance(item, list) and len(item) == 4 and isinstance(item[0], str)):
        return None
    _, starts, ends, seen = item
    if not (isinstance(starts, str) and isinstance(ends, str | None) and isinstance(seen, int | float)):
        return None
    try:
        starts_at, ends_at = (
            datetime.fromisoformat(starts),
            None if ends is None else datetime.fromisoformat(ends),
        )
    except ValueError:
        return None
    if starts_at.tzinfo is None or (ends_at is not None and ends_at.tzinfo is None):
        return None
    return Ended(starts_at, ends_at, float(seen))


def _share(raw: Any, group_key: str) -> StormShare | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("storm"), str):
        return None
    return StormShare(raw["storm"], tuple(_entry(group_key, e) for e in raw.get("entries", [])))


def _label_sets(raw: Any) -> tuple[Mapping[str, str], ...]:
    if not isinstance(raw, list):
        return ()
    return tuple({str(k): str(v) for k, v in item.items()} for item in raw if isinstance(item, dict))


def _storm(details: Mapping[str, Any]) -> StormRecord | None:
    if details.get("kind") != "storm":
        return None
    ended, table, refreshed = details.get("ended_at"), details.get("table"), details.get("refreshed_at")
    entries = dict(details.get("entries", {}))
    return StormRecord(
        started_at=float(details["started_at"]),
        last_new_at=float(details["last_new_at"]),
        ended_at=None if ended is None else float(ended),
        posted=bool(details.get("posted", False)),
        entries={key: tuple(_entry(key, e) for e in raw) for key, raw in entries.items()},
        table=table if isinstance(table, str) else None,
        refreshed_at=None if refreshed is None else float(refreshed),
    )


def _entry_json(e: StormEntry) -> list[Any]:
    times = [e.since, e.ended] if e.ended is not None else [e.since] if e.since is not None else []
    return [e.alertname, int(e.severity), e.target, e.cluster, *times]


def _entry(group_key: str, raw: list[Any]) -> StormEntry:
    name, severity, target, cluster, *times = raw
    since, ended = (*times, None, None)[:2]
    return StormEntry(
        str(name),
        Severity(int(severity)),
        group_key,
        target,
        cluster,
        since=None if since is None else float(since),
        ended=None if ended is None else float(ended),
    )
