"""The fleet's words: `/proxy fleet`'s rows, and the digest's line on the platform."""

from __future__ import annotations

from bot.domain.fleet import FleetHealth, FleetReport, FleetRow, FleetTarget
from bot.metrics import BotMetrics
from bot.render.blocks import block_texts
from bot.render.fleet import fleet_message, fleet_note

AT = 1_790_000_000.0  # 2026-09-21 14:13:20 UTC


def test_the_digest_says_how_old_the_fleet_is_and_since_when_the_platform_fails() -> None:
    assert fleet_note(None) is None
    up = FleetHealth("https://platform.example.com", AT, None, 3)
    assert fleet_note(up) == "fleet from the platform: 3 clients"
    refused = FleetHealth("https://platform.example.com", AT, None, 1, 1)
    assert fleet_note(refused) == (
        "fleet from the platform: 1 client, and 1 more it lists whose proxy section has problems: "
        "not watched (`/proxy fleet`)"
    )
    down = FleetHealth("https://platform.example.com", AT, AT + 600, 3)
    assert fleet_note(down) == (
        "fleet from the platform: 3 clients, as read 2026-09-21 14:13 UTC; the platform unreachable since "
        "2026-09-21 14:23 UTC: that fleet is kept"
    )


def test_metrics_show_the_platform_down_with_the_age_of_the_fleet() -> None:
    metrics = BotMetrics()
    health: list[FleetHealth | None] = [FleetHealth("https://p.example.com", AT, AT + 60, 2)]
    metrics.follow_fleet(lambda: health[0])
    text = metrics.exposition().decode()
    assert "proxybot_platform_up 0.0" in text
    assert "proxybot_fleet_read_timestamp_seconds 1.79e+09" in text
    assert 'proxybot_fleet_clients{state="read"} 2.0' in text
    health[0] = FleetHealth("https://p.example.com", AT + 120, None, 2)
    assert "proxybot_platform_up 1.0" in metrics.exposition().decode()


def test_a_client_with_problems_is_marked_and_its_problem_shown() -> None:
    rows = (
        FleetRow(
            "team-a", "platform", "platform", "cp/vcluster-team-a", "#a", (FleetTarget("p/t", ("x.io/v1",)),)
        ),
        FleetRow(
            "team-x", "platform", "platform", None, "#a", (), ("vCluster refuses its proxy section: …",)
        ),
    )
    message = fleet_message(FleetReport(rows, platform="https://p.example.com", instances=3))
    text = "\n".join(t for block in message.blocks for t in block_texts(block))
    assert message.text.startswith("Fleet: 2 clients, 1 target")
    assert "🔴 *team-x*" in text
    assert "⚠️ vCluster refuses its proxy section" in text
    assert "1 with problems: not watched until they are fixed" in text
