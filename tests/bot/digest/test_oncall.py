"""The digest's on-call figures read from the store and the silence watch's copy, and as Slack shows them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.digest.oncall import oncall_figures
from bot.domain.acknowledgement import Acknowledgement
from bot.domain.alerts import AlertStatus
from bot.domain.escalation import Escalation, EscalationOutcome
from bot.domain.oncall_figures import OncallFigures
from bot.domain.resolution import EpisodeRecord, EventKind, OncallEvent
from bot.domain.silences import Matcher, Silence
from bot.domain.verification import VerificationOutcome
from bot.render.digest_oncall import oncall_lines
from bot.store import AlertGroupState, Store, open_store
from bot.store.models import GroupFacts

NOW = 1_700_100_000.0
SINCE = NOW - 86400


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    yield opened
    await opened.close()


def resolved(key: str, at: float, record: EpisodeRecord) -> OncallEvent:
    detail = json.dumps(record.to_json())
    return OncallEvent(key, "#a", key, record.started_at, EventKind.RESOLVED, at, "", detail)


class Watch:
    def __init__(self, *silences: Silence) -> None:
        self.silences = silences


def silence(state: str, comment: str) -> Silence:
    at = datetime(2023, 11, 16, 14, 0, tzinfo=UTC)
    return Silence("s-" + state, state, (Matcher("target", "team-a/db"),), at, at, "alice (U1)", comment)


async def test_the_periods_figures_from_the_records_the_firing_groups_and_the_active_silences(
    store: Store,
) -> None:
    records = [
        EpisodeRecord(("team-a/db",), NOW - 7200, 600, 60, "U1", False),
        EpisodeRecord(("team-a/db",), NOW - 3600, 1200, 180, "U2", True),
        EpisodeRecord(("team-b/queue",), NOW - 1800, 300, None, None, False),
    ]
    for i, r in enumerate(records):
        await store.record_event(resolved(f"g{i}", r.started_at + r.fired_seconds, r))
    # Resolved before the period: not counted.
    await store.record_event(
        resolved("old", SINCE - 10, EpisodeRecord(("x/y",), SINCE - 100, 90, None, None, True))
    )
    facts = GroupFacts(
        firing_labels=({"alertname": "ResourceProxyNoHealthyPeers", "target": "team-c/cache"},)
    )
    await store.save_group(
        AlertGroupState("#a", "firing", AlertStatus.FIRING, ts="1.1", first_firing_at=NOW - 4000, facts=facts)
    )
    watch = Watch(silence("active", "db <maintenance>"), silence("expired", "gone"))
    found = await oncall_figures(store, watch, since=SINCE, now=NOW)
    assert (found.incidents, found.resolved, found.open) == (4, 3, 1)
    assert (found.never_acknowledged, found.escalated) == (1, 1)
    assert found.tta_median == 120.0
    assert found.noisiest[0] == ("team-c/cache", 4000.0)
    assert [s.comment for s in found.silences] == ["db <maintenance>"]
    lines = "\n".join(oncall_lines(found))
    assert (
        "*On call:* 4 incidents (3 resolved, 1 firing now); 1 never acknowledged, 1 not acknowledged yet, "
        "1 escalated." in lines
    )
    assert "Time to acknowledge: median 2 min" in lines
    assert (
        "Noisiest by firing time: `team-c/cache` 1 h 6 min, `team-a/db` 30 min, `team-b/queue` 5 min."
        in lines
    )
    assert "by alice (U1) until 2023-11-16 14:00 UTC: db &lt;maintenance&gt;" in lines


def test_one_incident_is_one_incident() -> None:
    figures = OncallFigures(1, 0, 1, None, None, None, None, 0, 0, (), (), not_acknowledged_yet=1)
    assert oncall_lines(figures)[0].startswith("*On call:* 1 incident (0 resolved, 1 firing now)")


def test_an_incident_nobody_took_is_not_acknowledged_and_no_time_reads_n_a() -> None:
    figures = OncallFigures(1, 0, 1, None, None, None, None, 0, 0, (), (), not_acknowledged_yet=1)
    first, times, *_ = oncall_lines(figures)
    assert first == "*On call:* 1 incident (0 resolved, 1 firing now); 1 not acknowledged yet, 0 escalated."
    assert times == "Time to acknowledge: none acknowledged yet. Time to resolve: none resolved yet."


async def test_a_group_firing_now_counts_its_acknowledgement_and_its_escalation(store: Store) -> None:
    for key, first in (("taken", NOW - 900), ("paged", NOW - 1200)):
        facts = GroupFacts(firing_labels=({"alertname": "ResourceProxyNoHealthyPeers", "target": key},))
        await store.save_group(
            AlertGroupState("#a", key, AlertStatus.FIRING, ts="1.1", first_firing_at=first, facts=facts)
        )
    await store.acknowledge(Acknowledgement("#a", "taken", NOW - 900, "U1", "alice", NOW - 780))
    # An acknowledgement of an earlier episode is not this one's.
    await store.acknowledge(Acknowledgement("#a", "paged", NOW - 5000, "U1", "alice", NOW - 4900))
    paged = await store.schedule_escalation(Escalation("#a", "paged", NOW - 1200, NOW - 900))
    await store.close_escalation(paged, EscalationOutcome.SENT)
    found = await oncall_figures(store, None, since=SINCE, now=NOW)
    assert (found.open, found.not_acknowledged_yet, found.escalated) == (2, 1, 1)
    assert found.tta_median == 120.0
    assert "Time to acknowledge: median 2 min, p90 2 min." in oncall_lines(found)[1]


def verification(key: str, at: float, outcome: VerificationOutcome) -> OncallEvent:
    return OncallEvent(f"verification:{key}", "#a", key, at - 600, EventKind.VERIFICATION, at, "", outcome)


async def test_resolved_unverified_is_counted_and_shown_only_when_some_were(store: Store) -> None:
    record = EpisodeRecord(("team-a/db",), NOW - 7200, 600, 60, "U1", False)
    await store.record_event(resolved("g", record.started_at + record.fired_seconds, record))
    quiet = await oncall_figures(store, None, since=SINCE, now=NOW)
    assert quiet.unverified == 0
    assert "unverified" not in "\n".join(oncall_lines(quiet))
    await store.record_event(verification("g", NOW - 6000, VerificationOutcome.UNVERIFIED))
    await store.record_event(verification("h", NOW - 5000, VerificationOutcome.VERIFIED))
    await store.record_event(verification("i", NOW - 4000, VerificationOutcome.FLAPPING))
    await store.record_event(verification("j", NOW - 3000, VerificationOutcome.UNVERIFIED))
    # Verified before the period: not counted.
    await store.record_event(verification("old", SINCE - 10, VerificationOutcome.UNVERIFIED))
    found = await oncall_figures(store, None, since=SINCE, now=NOW)
    assert found.unverified == 2
    assert "0 never acknowledged, 0 escalated, 2 resolved unverified." in oncall_lines(found)[0]
