"""The digest stop's day before (`bot.cli.demo`'s past day, issue 40): a simulated day sampled into the
stop's store, so the stop's digest charts the night's outage, its dip and recovery, and its 503s."""

from __future__ import annotations

import io
import math
import secrets
from pathlib import Path

import pytest

from bot.cli.demo import (
    DAY,
    PAST_ACK_AFTER,
    PAST_EVERY,
    PAST_OUTAGE,
    Demo,
    TerminalSlack,
    _past_day,
)
from bot.cli.demo_tour import texts, tour_stops
from bot.digest.oncall import oncall_figures
from bot.domain.digest import Health
from bot.render.terminal import Style
from bot.store import open_store
from sim.slack_api import FakeSlack
from sim.slack_page import SlackPage

CRD_STORE = "platform/crd-store"


@pytest.mark.slow
async def test_the_day_before_the_digest_stop_charts_its_outage(tmp_path: Path) -> None:
    [stop] = [s for s in tour_stops() if s.past_day]
    assert stop.channel == "#tour-digest"
    assert stop.epoch is not None
    slack = FakeSlack(bot_token="xoxb-test", channels=[stop.channel])
    sink = TerminalSlack(io.StringIO(), Style(False))
    demo = Demo(slack, SlackPage(slack), sink, secrets.token_hex(16), secrets.token_urlsafe(24), None)

    with slack:
        assert await _past_day(demo, stop, tmp_path) == 47  # every half hour, the last half an hour before

    store = await open_store(f"sqlite:///{tmp_path / 'demo.db'}")
    try:
        samples = await store.fleet_samples(since=0.0)
        oncall = await oncall_figures(store, None, since=stop.epoch - DAY, now=stop.epoch)
        # None left for the stop's bot, which would probe crd-store as it goes down again.
        assert await store.due_verifications(math.inf) == []
    finally:
        await store.close()
    start = stop.epoch - DAY
    # Stamped with the past world's shown clock: a day ending at the stop's t=0, whatever the machine.
    assert [s.at - start for s in samples] == [PAST_EVERY * i for i in range(1, 48)]
    assert all(len(s.sample["targets"]) == 12 for s in samples)  # the demo's fleet, as the stop's
    down, up = (start + at for at in PAST_OUTAGE)
    healthy = {s.at: s.sample["targets"][CRD_STORE]["s"] == Health.HEALTHY.value for s in samples}
    dipped = [at for at, ok in healthy.items() if not ok]
    assert dipped, "the outage's dip"
    assert all(down <= at <= up for at in dipped)  # only while its control plane hangs ...
    assert all(ok for at, ok in healthy.items() if at > up)  # ... and recovered after
    failed = {r for s in samples if down < s.at <= up for r, n in s.sample["faults"].items() if n > 0}
    assert "all_quarantined" in failed  # the 503s of a target with no healthy peer

    # The night's alert went through the bot as the stop's do: posted in the stop's channel, acknowledged
    # on the page, resolved when crd-store was back. Its record gives the digest its times.
    assert (oncall.incidents, oncall.resolved, oncall.open, oncall.never_acknowledged) == (1, 1, 0, 0)
    assert oncall.tta_median is not None
    assert PAST_ACK_AFTER <= oncall.tta_median < PAST_ACK_AFTER + 600
    assert oncall.ttr_median is not None
    # Fired minutes after the outage began, resolved minutes after it ended: as long as the chart's dip.
    assert abs(oncall.ttr_median - (PAST_OUTAGE[1] - PAST_OUTAGE[0])) < 10 * 60
    [night] = slack.top_level(slack.channel_id(stop.channel))
    shown = texts(night)
    assert "RESOLVED" in shown
    assert "platform/crd-store" in shown
    assert "Acknowledged by" in shown
