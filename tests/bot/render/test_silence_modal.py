"""The thread line a silence made from the modal leaves: when it ends, dated when that is another day."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.render.silence_modal import silenced_reply

MADE = ["silence `6b0e2a1c` (target=platform/crd-store)"]


def test_a_silence_ending_the_same_day_says_the_time_and_one_ending_days_later_the_date() -> None:
    same_day = silenced_reply(
        "U0ALICE01", datetime(2026, 12, 2, 14, 0, tzinfo=UTC), 4 * 3600, "upgrade", MADE
    )
    assert same_day.text.startswith("🔕 <@U0ALICE01> silenced this alert until 14:00 UTC (4 h): upgrade")
    later = silenced_reply("U0ALICE01", datetime(2026, 12, 5, 14, 0, tzinfo=UTC), 3 * 86400, "rebuild", MADE)
    assert later.text.startswith(
        "🔕 <@U0ALICE01> silenced this alert until 2026-12-05 14:00 UTC (3 d): rebuild"
    )
    # Made at 22:00 for 4 h: it ends after midnight, on the next day.
    overnight = silenced_reply("U0ALICE01", datetime(2026, 12, 3, 2, 0, tzinfo=UTC), 4 * 3600, "night", MADE)
    assert "until 2026-12-03 02:00 UTC (4 h)" in overnight.text
