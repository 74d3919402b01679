"""shorten_rules changes every duration of the shipped rule file, and nothing else."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness.process import HarnessError
from tests.harness.rules import AGE_THRESHOLD, E2E, RANGE_SELECTOR, Shortening, shorten_rules

RULES = Path(__file__).resolve().parents[2] / "config" / "rules" / "proxy-alerts.yaml"


def alert_rules(text: str) -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(text)["groups"] for rule in group["rules"]]


def windows(expr: str) -> list[str]:
    return RANGE_SELECTOR.findall(expr)


def ages(expr: str) -> list[str]:
    return [m["seconds"] for m in AGE_THRESHOLD.finditer(expr)]


def masked(expr: str) -> str:
    """The expression with its windows and age thresholds blanked, to compare everything else."""
    return AGE_THRESHOLD.sub(lambda m: m["head"] + "AGE", RANGE_SELECTOR.sub("[W]", expr))


@pytest.fixture(scope="module")
def pairs() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    original = RULES.read_text()
    return list(zip(alert_rules(original), alert_rules(shorten_rules(original)), strict=True))


def test_every_for_duration_is_shortened(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    holds = [(old["for"], new["for"]) for old, new in pairs if "for" in old]
    assert len(holds) == 4
    assert all(new == E2E.holds[old] for old, new in holds)


def test_every_range_window_is_shortened(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    found = [(windows(old["expr"]), windows(new["expr"])) for old, new in pairs]
    assert sum(len(old) for old, _ in found) == 4
    assert all(new == [E2E.windows[w] for w in old] for old, new in found)


def test_the_probe_age_threshold_is_shortened(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    probe_old, probe_new = next(
        (old, new) for old, new in pairs if old["alert"] == "ResourceProxyProbeFailing"
    )
    assert ages(probe_old["expr"]) == ["900", "900"]
    assert ages(probe_new["expr"]) == ["60", "60"]
    assert "900" not in probe_new["expr"]


def test_nothing_but_durations_changes(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    for old, new in pairs:
        assert masked(old["expr"]) == masked(new["expr"]), old["alert"]
        assert {k: v for k, v in old.items() if k not in {"expr", "for"}} == {
            k: v for k, v in new.items() if k not in {"expr", "for"}
        }


def test_no_original_duration_survives() -> None:
    text = shorten_rules(RULES.read_text())
    assert not re.search(r"\[(5m|10m|30m|1h)\]|for: (2m|5m|30m)|> 900", text)


def test_a_duration_without_a_mapping_is_refused() -> None:
    with pytest.raises(HarnessError, match="range window '10m'"):
        shorten_rules(RULES.read_text(), Shortening(holds=E2E.holds, ages=E2E.ages))
    with pytest.raises(HarnessError, match="for duration '2m'"):
        shorten_rules(RULES.read_text(), Shortening(windows=E2E.windows, ages=E2E.ages))


def test_promtool_accepts_the_shortened_rules(tmp_path: Path) -> None:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is not on PATH: install Debian's `prometheus` package")
    path = tmp_path / "short.yaml"
    path.write_text(shorten_rules(RULES.read_text()))
    result = subprocess.run(
        [binary, "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
