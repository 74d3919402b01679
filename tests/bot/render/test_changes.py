"""What changed before an alert as Slack shows it: one escaped line, and the diff within the room given."""

from __future__ import annotations

from typing import Any

from bot.domain.changes import ChangeReport, EndHistory, InstanceFacts, InstanceVersion
from bot.render.changes import change_details, change_line

CLIENT = "platform/team-a"
FIRED = 50_000.0


def proxy(entries: dict[str, Any]) -> InstanceFacts:
    return InstanceFacts.of({"experimental": {"proxy": {"customResources": entries}}}, "0.37.1")


def report(before: InstanceFacts, after: InstanceFacts) -> ChangeReport:
    versions = (
        InstanceVersion(CLIENT, 1, FIRED - 3600, before),
        InstanceVersion(CLIENT, 2, FIRED - 300, after),
    )
    return ChangeReport(FIRED, ends=(EndHistory(CLIENT, versions),))


def test_the_line_is_labelled_and_its_outside_text_escaped() -> None:
    hostile = "<!channel>.example.com/v1"
    line = change_line(report(proxy({}), proxy({hostile: {"targetVirtualCluster": {"name": "x"}}})))
    assert line.startswith("*Changes:* 5 min before: team-a's vcluster.yaml enabled `")
    assert "<!channel>" not in line
    assert "&lt;!channel&gt;" in line


def test_nothing_changed_is_one_line_without_a_diff() -> None:
    same = report(proxy({}), proxy({}))
    assert change_details(same) == ["*Changes:* No change to team-a in the last 30 min"]


def test_the_diff_stays_within_its_room_and_counts_what_was_left_out() -> None:
    many = {f"r{i}.example.com/v1": {"targetVirtualCluster": {"name": "crd-store"}} for i in range(30)}
    lines = change_details(report(proxy({}), proxy(many)), room=400)
    assert len(lines) == 2
    diff = lines[1]
    assert diff.startswith("```")
    assert diff.endswith("```")
    assert len(diff) <= 400
    assert diff.removesuffix("```").splitlines()[-1].endswith("more lines left out")


def test_a_long_line_is_cut_and_a_cut_code_span_opens_nothing() -> None:
    many = {
        f"{'r' * 20}{i}.example.com/v1": {"targetVirtualCluster": {"name": "crd-store"}} for i in range(20)
    }
    line = change_line(report(proxy({}), proxy(many)), max_chars=120)
    assert len(line) <= len("*Changes:* ") + 120
    assert line.endswith("…")
    assert line.count("`") % 2 == 0
