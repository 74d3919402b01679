"""shorten_rules divides every duration of the shipped rule file by the factor, and changes nothing else."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness.process import HarnessError
from tests.harness.rules import (
    AGE_THRESHOLD,
    RANGE_SELECTOR,
    duration_seconds,
    format_duration,
    shorten_rules,
)

RULES = Path(__file__).resolve().parents[2] / "config" / "rules" / "proxy-alerts.yaml"
FACTOR = 20.0

RulePair = tuple[dict[str, Any], dict[str, Any]]


def alert_rules(text: str) -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(text)["groups"] for rule in group["rules"]]


def windows(expr: str) -> list[float]:
    return [duration_seconds(w) for w in RANGE_SELECTOR.findall(expr)]


def ages(expr: str) -> list[float]:
    return [float(m["seconds"]) for m in AGE_THRESHOLD.finditer(expr)]


def masked(expr: str) -> str:
    """The expression with its windows and age thresholds blanked, to compare everything else."""
    return AGE_THRESHOLD.sub(lambda m: m["head"] + "AGE", RANGE_SELECTOR.sub("[W]", expr))


@pytest.fixture(scope="module")
def pairs() -> list[RulePair]:
    original = RULES.read_text()
    return list(zip(alert_rules(original), alert_rules(shorten_rules(original, FACTOR)), strict=True))


def test_every_for_duration_is_divided(pairs: list[RulePair]) -> None:
    holds = [
        (duration_seconds(old["for"]), duration_seconds(new["for"])) for old, new in pairs if "for" in old
    ]
    assert sorted(old for old, _ in holds) == [120, 120, 300, 1800]
    assert all(new == old / FACTOR for old, new in holds)


def test_every_range_window_is_divided(pairs: list[RulePair]) -> None:
    found = [(windows(old["expr"]), windows(new["expr"])) for old, new in pairs]
    assert sorted(w for old, _ in found for w in old) == [300, 600, 1800, 3600]
    assert all(new == [w / FACTOR for w in old] for old, new in found)


def test_the_probe_age_threshold_is_divided(pairs: list[RulePair]) -> None:
    probe_old, probe_new = next((old, new) for old, new in pairs if "kube_cronjob_created" in old["expr"])
    assert ages(probe_old["expr"]) == [900, 900]
    assert ages(probe_new["expr"]) == [45, 45]


def test_nothing_but_durations_changes(pairs: list[RulePair]) -> None:
    for old, new in pairs:
        assert masked(old["expr"]) == masked(new["expr"]), old["alert"]
        rest_old = {k: v for k, v in old.items() if k not in {"expr", "for"}}
        assert rest_old == {k: v for k, v in new.items() if k not in {"expr", "for"}}


def test_no_original_duration_survives() -> None:
    text = shorten_rules(RULES.read_text(), FACTOR)
    assert not re.search(r"\[(5m|10m|30m|1h)\]|for: (2m|5m|30m)|> 900", text)


def test_fractions_of_a_second_become_milliseconds() -> None:
    assert format_duration(120 / 100) == "1200ms"
    assert format_duration(3600 / 100) == "36s"
    assert format_duration(0.0001) == "1ms"


def test_a_duration_it_cannot_read_is_refused() -> None:
    with pytest.raises(HarnessError, match="1h30m"):
        shorten_rules("expr: rate(x[1h30m]) > 0\n", FACTOR)
    with pytest.raises(HarnessError, match="positive"):
        shorten_rules("for: 2m\n", 0)


@pytest.mark.parametrize("factor", [1.0, 20.0, 100.0])
def test_promtool_accepts_the_shortened_rules(factor: float, tmp_path: Path) -> None:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is not on PATH: install Debian's `prometheus` package")
    path = tmp_path / "short.yaml"
    path.write_text(shorten_rules(RULES.read_text(), factor))
    argv = [binary, "check", "rules", str(path)]
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
