"""Only the silences proxybot made are attributed to a Slack user: its store says which, not `createdBy`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.domain.silences import Matcher, NewSilence, Silence
from bot.render.silence_line import ShownSilence, silence_line
from bot.silence_makers import MadeSilences
from bot.store import Store, open_store

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
MATCHERS = (Matcher("target", "team-a/db"),)


class Alertmanager:
    """Alertmanager's silences API as far as proxybot uses it: anyone may write any `createdBy`."""

    def __init__(self) -> None:
        self.made: list[Silence] = []

    async def create_silence(self, silence: NewSilence) -> str:
        silence_id = f"00000000-0000-4000-8000-{len(self.made):012d}"
        s = silence
        made = Silence(silence_id, "active", s.matchers, s.starts_at, s.ends_at, s.created_by, s.comment)
        self.made.append(made)
        return silence_id

    async def silences(self) -> list[Silence]:
        return list(self.made)

    async def expire_silence(self, silence: str) -> None:
        self.made = [s for s in self.made if s.id != silence]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}")
    yield opened
    await opened.close()


async def test_a_silence_claiming_a_slack_user_that_proxybot_did_not_make_names_no_one(store: Store) -> None:
    alertmanager = Alertmanager()
    silences = MadeSilences(alertmanager, store)
    ends = NOW + timedelta(hours=2)
    ours = await silences.create_silence(
        NewSilence(MATCHERS, NOW, ends, "alice (Slack U0ALICE01)", "upgrade")
    )
    # Made in Alertmanager (amtool, its page, its API) by someone who writes Alice's suffix.
    forged = await alertmanager.create_silence(
        NewSilence(MATCHERS, NOW, ends, "mallory (Slack U0ALICE01)", "<!here> hi")
    )
    listed = {s.id: s for s in await silences.silences()}
    assert (listed[ours].made_here, listed[ours].created_by) == (True, "alice (Slack U0ALICE01)")
    assert (listed[forged].made_here, listed[forged].created_by) == (False, "mallory (Slack U0ALICE01)")

    line = silence_line(ShownSilence.of(listed[forged]), NOW)
    assert "<@" not in line  # no mention: Alice is neither pinged nor named as its maker
    outside = "until 12:00 UTC (made outside proxybot): &lt;!here&gt; hi"
    assert line == f"🔕 Silenced by mallory (Slack U0ALICE01) {outside}"
    assert silence_line(ShownSilence.of(listed[ours]), NOW).startswith("🔕 Silenced by <@U0ALICE01> until")


async def test_an_author_rewritten_in_alertmanager_is_still_the_one_proxybot_wrote(store: Store) -> None:
    alertmanager = Alertmanager()
    silences = MadeSilences(alertmanager, store)
    ours = await silences.create_silence(NewSilence(MATCHERS, NOW, NOW, "alice (Slack U0ALICE01)", "upgrade"))
    # An update through Alertmanager's API keeps the id and may change createdBy.
    alertmanager.made = [
        Silence(s.id, s.state, s.matchers, s.starts_at, s.ends_at, "bob (Slack U0BOB0001)", s.comment)
        for s in alertmanager.made
    ]
    [listed] = await silences.silences()
    assert (listed.id, listed.made_here, listed.created_by) == (ours, True, "alice (Slack U0ALICE01)")
