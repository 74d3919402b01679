"""The digest message (worst first, quiet when all is well, within Slack's limits) and its chart PNGs."""

from __future__ import annotations

import struct
from dataclasses import replace

from bot.digest.history import PEERS_CHART, charts_from_samples
from bot.domain.digest import Change, Digest, FiringAlert, Health, ProbeRun, ReasonMove, TargetDigest
from bot.domain.enrichment import TimeSeries
from bot.domain.findings import Finding, Severity
from bot.domain.verdict import TargetVerdict, Verdict
from bot.domain.versions import Role, TenantVersion, parse_version
from bot.render.blocks import MAX_BLOCKS, MAX_MESSAGE_TEXT, block_texts, block_units
from bot.render.chart import Chart
from bot.render.digest import FIRING_LINES, chart_pngs, digest_message
from bot.render.terminal import show
from bot.store.digests import FleetSample

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def finding(target: str) -> Finding:
    return Finding(
        severity=Severity.CRITICAL,
        kind="no_healthy_peers",
        key=f"no_healthy_peers:{target}",
        title=f"{target}: no healthy peers",
        evidence=(),
        cause="every peer is quarantined",
        next_step="Check the target's control plane pods.",
        guide_section="x",
        target=target,
    )


def healthy(name: str) -> TargetDigest:
    return TargetDigest(name, "c1", Health.HEALTHY, healthy_peers=2.0)


def test_a_healthy_fleet_gets_a_short_quiet_digest() -> None:
    d = Digest("p", 1000.0, tuple(healthy(f"p/t{i}") for i in range(500)), cluster_seconds={"c1": 0.1})
    message = digest_message(d)
    assert len(message.blocks) == 2  # header and one context line, not a wall of green
    assert "all 500 targets healthy" in message.text


def test_degraded_first_with_finding_next_step_changes_probes_and_reasons() -> None:
    down = TargetDigest("p/down", "c1", Health.DEGRADED, (finding("p/down"),), healthy_peers=0.0)
    gone = TargetDigest("p/gone", "c2", Health.UNREACHABLE, unavailable="cluster c2: timed out")
    d = Digest(
        "p",
        1000.0,
        (gone, down, healthy("p/ok")),
        changes=(Change("p/down", Health.HEALTHY, Health.DEGRADED),),
        moved=(ReasonMove("p/down", "request", "all_quarantined", 12.0, True),),
        probes=(ProbeRun("c1", False, 1800.0, "no successful run within 900 s"),),
        previous_at=900.0,
        cluster_seconds={"c1": 0.1, "c2": 4.0},
    )
    text = show(digest_message(d))
    assert "1 degraded, 1 unreachable, 1 of 3 healthy" in text
    assert text.index("Degraded") < text.index("Unreachable") < text.index("Changed since")
    assert "Check the target's control plane pods." in text
    assert "healthy → degraded" in text
    assert "last success 30 min ago" in text
    assert "all_quarantined: +12 since the last digest" in text


def firing(
    n: int, link: str | None = "https://acme.slack.com/archives/C0ALERTS/p1700000000000100"
) -> FiringAlert:
    return FiringAlert(f"Alert{n}", "team-a/db", 1, Severity.CRITICAL, 1000.0 - 60 * n, link)


def firing_section(d: Digest) -> list[str]:
    texts = [t for block in digest_message(d).blocks for t in block_texts(block)]
    [section] = [t for t in texts if t.startswith("*Firing now*")]
    return section.splitlines()[1:]


def test_a_shared_target_counts_once_and_shows_every_client_behind_it() -> None:
    ledger = "payments/ledger"
    cut = TargetDigest(ledger, "payments-api", Health.DEGRADED, (finding(ledger),), healthy_peers=0.0)
    fine = TargetDigest(ledger, "risk-engine", Health.HEALTHY, healthy_peers=1.0)
    d = Digest("p", 1000.0, (cut, fine, healthy("p/ok")), cluster_seconds={"c1": 0.1})
    text = show(digest_message(d))
    # Two targets, not three readings: the ledger one client cannot reach is not healthy.
    assert "1 degraded, 0 unreachable, 1 of 2 healthy" in text
    assert (
        "🎯 payments/ledger: 1 of 2 clients hit: payments-api 🔴 payments/ledger: no healthy peers · "
        "risk-engine ✅ healthy"
    ) in " ".join(text.split())
    # The chart's sample is the target's worst client's.
    assert d.sample()["targets"][ledger] == {"h": 0.0, "s": "degraded"}


def test_the_triage_tally_and_the_versions_count_each_target_once() -> None:
    ledger = "payments/ledger"
    down = TargetVerdict(Verdict.PROXY_PATH, "cut", (), (), "path")
    fine = TargetVerdict(Verdict.HEALTHY, "ok", (), (), "")
    readings = (
        TargetDigest(ledger, "payments-api", Health.DEGRADED, (finding(ledger),), verdict=down),
        TargetDigest(ledger, "risk-engine", Health.HEALTHY, verdict=fine),
        replace(healthy("p/ok"), verdict=fine),
    )
    versions = tuple(
        TenantVersion(name, role, parse_version("0.37.1"))
        for name, role in ((ledger, Role.TARGET), (ledger, Role.TARGET), ("payments-api", Role.CLIENT))
    )
    text = show(digest_message(Digest("p", 1000.0, readings, versions=versions)))
    assert "Quick triage: 🟠 proxy_path 1 · ✅ healthy 1" in text
    assert "vCluster versions: 0.37.1 on 2 tenant clusters" in text


def test_alerts_firing_now_link_to_their_messages_even_in_a_quiet_digest() -> None:
    alerts = (firing(1), replace(firing(2, link=None), alerts=3, severity=Severity.WARNING))
    d = Digest("p", 1000.0, (healthy("p/ok"),), firing=alerts)
    assert firing_section(d) == [
        "🔴 <https://acme.slack.com/archives/C0ALERTS/p1700000000000100|Alert1> · `team-a/db` · for 1 min",
        "🟠 Alert2 (3 alerts) · `team-a/db` · for 2 min",
    ]
    assert "Firing now" not in show(digest_message(replace(d, firing=())))


def test_at_most_ten_firing_alerts_then_how_many_more() -> None:
    d = Digest("p", 1000.0, (healthy("p/ok"),), firing=tuple(firing(n) for n in range(FIRING_LINES + 4)))
    lines = firing_section(d)
    assert len(lines) == FIRING_LINES + 1
    assert lines[-1] == "… +4 more"


def test_a_hostile_alert_name_is_inert_inside_and_outside_its_link() -> None:
    hostile = "<!channel> x|y\n*Next step:* `run` ```"
    for link in ("https://acme.slack.com/archives/C0ALERTS/p1", None):
        d = Digest("p", 1000.0, (healthy("p/ok"),), firing=(replace(firing(1, link), name=hostile),))
        [line] = firing_section(d)
        assert "<!channel>" not in line
        assert "&lt;!channel&gt;" in line
        assert "```" not in line
        assert line.count("<") == (1 if link else 0)


def test_a_huge_degraded_fleet_stays_within_slacks_limits() -> None:
    targets = tuple(
        TargetDigest(f"p/t{i}", f"c{i}", Health.DEGRADED, (finding(f"p/t{i}"),)) for i in range(1000)
    )
    message = digest_message(Digest("p", 1.0, targets))
    assert len(message.blocks) <= MAX_BLOCKS
    assert sum(block_units(b) for b in message.blocks) <= MAX_MESSAGE_TEXT
    assert "more" in show(digest_message(Digest("p", 1.0, targets)))


def _png_size(png: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def test_charts_are_valid_pngs_of_sane_size() -> None:
    samples = [
        FleetSample(
            1000.0 + 600 * i,
            {
                "targets": {"p/down": {"h": float(max(0, 2 - i)), "s": "degraded"}},
                "faults": {"timeout": 5.0 * i},
            },
        )
        for i in range(6)
    ]
    down = TargetDigest("p/down", "c1", Health.DEGRADED, (finding("p/down"),), healthy_peers=0.0)
    charts = charts_from_samples(Digest("p", 4000.0, (down,)), samples, 3600.0)
    assert [c.key for c in charts] == [PEERS_CHART, "failing-reasons"]
    assert charts[0].lines[0].name == "p/down"
    # 5 more failures every 10 minutes: a step of 0.5 a minute over each interval.
    assert [v for _, v in charts[1].lines[0].points] == [0.5] * 10
    for png in chart_pngs(charts):
        assert png.png.startswith(PNG_SIGNATURE)
        assert 5_000 < len(png.png) < 300_000
        assert _png_size(png.png) == (800, 400)


def test_an_all_healthy_chart_is_one_line_not_a_wall() -> None:
    samples = [
        FleetSample(float(i), {"targets": {f"p/t{n}": {"h": 2.0, "s": "healthy"} for n in range(50)}})
        for i in range(3)
    ]
    charts = charts_from_samples(
        Digest("p", 3.0, tuple(healthy(f"p/t{n}") for n in range(50))), samples, 3600.0
    )
    assert [line.name for line in charts[0].lines] == ["healthy targets"]
    assert charts[0].lines[0].points[0] == (0.0, 50.0)


def test_an_empty_chart_still_renders() -> None:
    chart = Chart("x", "nothing yet", "y", (TimeSeries("a", ()),), 3600.0, 1000.0)
    assert chart_pngs([chart])[0].png.startswith(PNG_SIGNATURE)


def test_one_more_finding_is_one_finding() -> None:
    two = (finding("p/down"), replace(finding("p/down"), key="other", title="p/down: other"))
    down = TargetDigest("p/down", "c1", Health.DEGRADED, two, healthy_peers=0.0)
    text = show(digest_message(Digest("p", 1000.0, (down,), cluster_seconds={"c1": 0.1})))
    assert "(+1 more finding)" in text
