"""An instance's defining facts, the changes between two versions, and an alert's line and diff of them."""

from __future__ import annotations

from typing import Any

import pytest

from bot.domain.changes import (
    Change,
    ChangeKind,
    ChangeReport,
    EndHistory,
    InstanceFacts,
    InstanceVersion,
    diff_facts,
)
from bot.domain.redact import MARK

CLIENT, TARGET = "platform/team-a", "platform/crd-store"
WIDGETS, DATASETS = "widgets.example.com/v1", "datasets.data.example.com/v1alpha1"
FIRED = 100_000.0


def entry(target: str = "crd-store", **more: Any) -> dict[str, Any]:
    return {"enabled": True, "targetVirtualCluster": {"name": target}, "accessResources": "owned", **more}


def values(entries: dict[str, Any] | None = None, policy: dict[str, Any] | None = None, **proxy: Any) -> Any:
    found = {WIDGETS: entry(), DATASETS: entry()} if entries is None else entries
    doc: dict[str, Any] = {"experimental": {"proxy": {"customResources": found, **proxy}}}
    doc["policies"] = {"networkPolicy": policy if policy is not None else {"enabled": True}}
    return doc


BASE = InstanceFacts.of(values(), "0.27.3")


def changed(after: InstanceFacts, before: InstanceFacts = BASE) -> tuple[Change, ...]:
    return diff_facts(before, after, "platform")


def test_equal_facts_change_nothing_whatever_their_key_order() -> None:
    reordered = InstanceFacts.of({"policies": {"networkPolicy": {"enabled": True}}, **values()}, "0.27.3")
    assert changed(reordered) == ()
    assert reordered.digest == BASE.digest
    assert InstanceFacts.of(values(), "0.28.1").digest != BASE.digest


def test_an_entry_disabled_or_removed_is_disabled() -> None:
    off = InstanceFacts.of(values({WIDGETS: entry(enabled=False), DATASETS: entry()}), "0.27.3")
    gone = InstanceFacts.of(values({DATASETS: entry()}), "0.27.3")
    assert changed(off) == changed(gone) == (Change(ChangeKind.DISABLED, WIDGETS),)
    assert changed(BASE, before=off) == (Change(ChangeKind.ENABLED, WIDGETS, after=TARGET),)


def test_a_retarget_names_both_targets_with_their_projects() -> None:
    moved = values(
        {
            WIDGETS: entry(),
            DATASETS: {**entry("store-b"), "targetVirtualCluster": {"name": "b", "project": "data"}},
        }
    )
    assert changed(InstanceFacts.of(moved, "0.27.3")) == (
        Change(ChangeKind.RETARGETED, DATASETS, TARGET, "data/b"),
    )


def test_access_mode_other_proxy_keys_policy_and_version_are_changes() -> None:
    after = InstanceFacts.of(
        values(
            {WIDGETS: entry(accessResources="all"), DATASETS: entry()},
            policy={"enabled": False},
            extra={"on": True},
        ),
        "0.28.1",
    )
    assert changed(after) == (
        Change(ChangeKind.ACCESS, WIDGETS, "owned", "all"),
        Change(ChangeKind.PROXY, "extra"),
        Change(ChangeKind.POLICY, "enabled"),
        Change(ChangeKind.VERSION, before="0.27.3", after="0.28.1"),
    )


def test_an_unreadable_vcluster_yaml_is_one_change_and_says_why() -> None:
    broken = InstanceFacts.unreadable_yaml("0.27.3", "not YAML")
    assert changed(broken) == (Change(ChangeKind.UNREADABLE, after="not YAML"),)
    assert changed(BASE, before=broken) == (Change(ChangeKind.UNREADABLE),)
    assert InstanceFacts.of(["a list"], None).unreadable == "its vcluster.yaml is not a mapping"


def test_secret_named_values_are_replaced_before_the_facts_are_kept() -> None:
    facts = InstanceFacts.of(
        values(policy={"enabled": True, "password": "hunter22", "extra": {"apiKey": "abc"}}, token="t0k"),
        "0.27.3",
    )
    kept = str(facts.document())
    assert "hunter22" not in kept
    assert "abc" not in kept
    assert "t0k" not in kept
    assert facts.network_policy == {"enabled": True, "password": MARK, "extra": {"apiKey": MARK}}


def version(instance: str, seq: int, minutes_before: float, facts: InstanceFacts) -> InstanceVersion:
    return InstanceVersion(instance, seq, FIRED - minutes_before * 60, facts)


TARGET_0273 = InstanceFacts.of({}, "0.27.3")
TARGET_0281 = InstanceFacts.of({}, "0.28.1")
WIDGETS_OFF = InstanceFacts.of(values({WIDGETS: entry(enabled=False), DATASETS: entry()}), "0.27.3")


def test_the_line_tells_each_change_in_the_window_newest_first() -> None:
    report = ChangeReport(
        FIRED,
        ends=(
            EndHistory(CLIENT, (version(CLIENT, 1, 600, BASE), version(CLIENT, 2, 25, WIDGETS_OFF))),
            EndHistory(TARGET, (version(TARGET, 1, 600, TARGET_0273), version(TARGET, 2, 12, TARGET_0281))),
        ),
    )
    assert report.line() == (
        "12 min before: crd-store's control plane restarted with vcluster 0.28.1 (was 0.27.3); "
        f"25 min before: team-a's vcluster.yaml disabled `{WIDGETS}`"
    )


def test_changes_before_the_window_are_not_told_and_nothing_changed_is_said() -> None:
    report = ChangeReport(
        FIRED,
        ends=(
            EndHistory(CLIENT, (version(CLIENT, 1, 600, BASE), version(CLIENT, 2, 31, WIDGETS_OFF))),
            EndHistory(TARGET, (version(TARGET, 1, 600, TARGET_0273),)),
        ),
    )
    assert report.changes == ()
    assert report.line() == "No change to either end in the last 30 min"
    assert report.diff() == ""


def test_a_change_seen_after_it_fired_is_told_as_such() -> None:
    report = ChangeReport(
        FIRED, ends=(EndHistory(CLIENT, (version(CLIENT, 1, 60, BASE), version(CLIENT, 2, -3, WIDGETS_OFF))),)
    )
    assert report.line().startswith(f"seen 3 min after it fired: team-a's vcluster.yaml disabled `{WIDGETS}`")
    # Seen within one reading of the platform after it fired: it may well have come before.
    read_often = ChangeReport(FIRED, ends=report.ends, every=300.0)
    assert read_often.line().startswith("around when it fired: team-a's vcluster.yaml disabled")


def test_an_end_without_history_or_unreadable_says_so_beside_the_rest() -> None:
    report = ChangeReport(
        FIRED,
        ends=(
            EndHistory(CLIENT, (version(CLIENT, 1, 600, BASE),)),
            EndHistory(TARGET, unreadable="timed out after 2 s"),
        ),
    )
    assert report.line() == (
        "No change to team-a in the last 30 min; crd-store's history could not be read (timed out after 2 s)"
    )
    unkept = ChangeReport(
        FIRED, ends=(EndHistory(CLIENT, (version(CLIENT, 1, 600, BASE),)), EndHistory(TARGET))
    )
    assert (
        unkept.line()
        == "No change to team-a in the last 30 min; no history of crd-store (not listed by the platform)"
    )


def test_a_history_that_cannot_be_read_says_so_in_the_line() -> None:
    assert ChangeReport.failed(FIRED, "the store did not answer within 2 s").line() == (
        "Changes before it: unknown, the history could not be read (the store did not answer within 2 s)"
    )


def test_the_line_names_at_most_three_changes_and_counts_the_rest() -> None:
    versions = [version(CLIENT, 1, 29, BASE)]
    for seq in range(2, 7):
        versions.append(version(CLIENT, seq, 29 - seq * 4, InstanceFacts.of(values(), f"0.{seq}.0")))
    report = ChangeReport(FIRED, ends=(EndHistory(CLIENT, tuple(versions)),))
    assert len(report.changes) == 5
    line = report.line()
    assert line.count("restarted with") == 3
    assert line.startswith("5 min before: team-a's control plane restarted with vcluster 0.6.0 (was 0.5.0)")
    assert line.endswith("; and 2 earlier changes (in the details)")


def test_the_diff_shows_the_changed_lines_redacted_and_bounded() -> None:
    secret = InstanceFacts.of(values(policy={"enabled": True, "token": "s3cr3t"}), "0.27.3")
    report = ChangeReport(
        FIRED, ends=(EndHistory(CLIENT, (version(CLIENT, 1, 60, BASE), version(CLIENT, 2, 5, secret))),)
    )
    diff = report.diff()
    assert diff.startswith("# platform/team-a, 5 min before\n")
    assert f'+networkPolicy.token: "{MARK}"' in diff
    assert "s3cr3t" not in diff
    many = {f"r{i}.example.com/v1": entry() for i in range(40)}
    big = ChangeReport(
        FIRED,
        ends=(
            EndHistory(
                CLIENT,
                (version(CLIENT, 1, 60, BASE), version(CLIENT, 2, 5, InstanceFacts.of(values(many), "1"))),
            ),
        ),
    )
    bounded = big.diff(max_lines=10, max_chars=2000)
    lines = bounded.splitlines()
    assert len(lines) == 11
    assert lines[-1].startswith("… ")
    assert lines[-1].endswith(" more lines left out")
    assert len(big.diff(max_lines=500, max_chars=800)) <= 800 + len("\n… 999 more lines left out")


@pytest.mark.parametrize("minutes", [1, 12, 29])
def test_the_window_counts_whole_minutes(minutes: int) -> None:
    report = ChangeReport(
        FIRED,
        ends=(EndHistory(CLIENT, (version(CLIENT, 1, 60, BASE), version(CLIENT, 2, minutes, WIDGETS_OFF))),),
    )
    assert report.line().startswith(f"{minutes} min before: ")


def test_a_diff_line_is_one_value_of_a_list_and_clipped() -> None:
    rule = {"to": [{"namespaceSelector": {"matchLabels": {"name": "vcluster-" + "x" * 300}}}]}
    after = InstanceFacts.of(values(policy={"enabled": True, "egress": [rule]}), "0.27.3")
    report = ChangeReport(
        FIRED, ends=(EndHistory(CLIENT, (version(CLIENT, 1, 60, BASE), version(CLIENT, 2, 5, after))),)
    )
    [added] = [line for line in report.diff().splitlines() if line.startswith("+")]
    assert added.startswith("+networkPolicy.egress[0].to[0].namespaceSelector.matchLabels.name: ")
    assert len(added) == 1 + 160
    assert added.endswith("…")


def test_nothing_changed_on_three_ends_names_them() -> None:
    other = "platform/crd-store-b"
    ends = tuple(EndHistory(ref, (version(ref, 1, 600, BASE),)) for ref in (CLIENT, TARGET, other))
    assert ChangeReport(FIRED, ends=ends).line() == (
        "No change to team-a, crd-store or crd-store-b in the last 30 min"
    )
