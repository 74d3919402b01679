"""Our histogram_quantile against real Prometheus: `promtool test rules` on values we computed.

promtool 2.42 compares `exp_samples` exactly (Go's reflect.DeepEqual on float64), so each expected value
must be bit-identical to Prometheus' answer; a 1-ulp difference fails. That same exactness makes NaN
unrepresentable (NaN != NaN), so a NaN answer is asserted through `(Q) != bool (Q)`, which is 1 only
for NaN and 0 for every number including the infinities.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.domain.quantile import histogram_quantile
from bot.domain.snapshot import REQUEST_DURATION, Bucket

SERIES = f"{REQUEST_DURATION}_bucket"

# q -> layout name -> the quantile we expect Prometheus to return.
Expectations = dict[float, dict[str, float]]

# Bounds of the guide's histograms: requests up to the 60 s deadline, dials up to the 5 s dial timeout.
REQUEST_BOUNDS = ("0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60")
DIAL_BOUNDS = ("0.001", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5")


@dataclass(frozen=True)
class Layout:
    """One histogram as it would be scraped: `le` label values and cumulative counts."""

    name: str
    buckets: tuple[tuple[str, float], ...]

    def as_buckets(self) -> list[Bucket]:
        return [Bucket(float(le), count) for le, count in self.buckets]


def _cumulative(
    bounds: tuple[str, ...], increments: list[float], in_inf: float
) -> tuple[tuple[str, float], ...]:
    out: list[tuple[str, float]] = []
    total = 0.0
    for le, inc in zip(bounds, increments, strict=True):
        total += inc
        out.append((le, total))
    return (*out, ("+Inf", total + in_inf))


LAYOUTS = (
    Layout(
        "typical",
        (("0.05", 3), ("0.1", 40), ("0.25", 180), ("0.5", 412), ("1", 498), ("2.5", 511), ("+Inf", 513)),
    ),
    Layout("request_60s", _cumulative(REQUEST_BOUNDS, [5, 17, 60, 230, 410, 95, 31, 12, 7, 3, 2, 1, 1], 1)),
    Layout("dial_5s", _cumulative(DIAL_BOUNDS, [0, 2, 11, 38, 70, 21, 4, 1, 0, 0, 3], 0)),
    Layout("all_in_inf", (("0.1", 0), ("1", 0), ("10", 0), ("+Inf", 42))),
    Layout("empty", (("0.1", 0), ("1", 0), ("+Inf", 0))),
    Layout("non_monotonic", (("0.1", 10), ("0.5", 4), ("1", 25), ("2", 19), ("+Inf", 30))),
    Layout("single_finite", (("5", 17), ("+Inf", 20))),
    Layout("only_inf", (("+Inf", 9),)),
    Layout("missing_inf", (("0.1", 3), ("1", 8))),
    Layout("duplicate_bounds", (("0.5", 2), ("1", 5), ("1.0", 5), ("+Inf", 14))),
    Layout("negative_first_bound", (("-1", 4), ("0", 6), ("2", 15), ("+Inf", 16))),
    Layout("zero_first_bound", (("0", 3), ("0.3", 7), ("+Inf", 8))),
    Layout("first_bucket_empty", (("0.1", 0), ("0.2", 6), ("+Inf", 9))),
    # Rates, not counts: fractions whose float rounding must come out exactly as in Go.
    Layout("fractional", (("0.1", 0.1 + 0.2), ("0.3", 1 / 3 + 0.3), ("0.7", 1.7 - 1 / 7), ("+Inf", 1.7))),
    # 2.42's envelope starts from the first count, so a NaN there leaves later dips unrepaired.
    Layout("nan_first_count", (("1", math.nan), ("2", 6), ("3", 4), ("4", 7), ("+Inf", 8))),
)

QS = (0.0, 0.01, 0.1, 0.25, 0.5, 0.625, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0, -0.5, 1.5, math.nan)


def _promql_number(x: float) -> str:
    return "NaN" if math.isnan(x) else repr(x)


def _input_series() -> list[dict[str, str]]:
    return [
        {"series": f'{SERIES}{{layout="{layout.name}",le="{le}"}}', "values": _promql_number(count)}
        for layout in LAYOUTS
        for le, count in layout.buckets
    ]


def _check(expr: str, samples: list[tuple[str, float]]) -> dict[str, Any]:
    exp = [{"labels": f'{{layout="{name}"}}', "value": value} for name, value in samples]
    return {"expr": expr, "eval_time": "0m", "exp_samples": exp}


def _selector(names: list[str]) -> str:
    return f'{SERIES}{{layout=~"{"|".join(names)}"}}'


def _checks_for(q: float, expected: dict[str, float]) -> list[dict[str, Any]]:
    """One check of the numbers, one of the NaNs, for one q."""
    numbers = {n: v for n, v in expected.items() if not math.isnan(v)}
    nans = [n for n, v in expected.items() if math.isnan(v)]
    checks = []
    if numbers:
        expr = f"histogram_quantile({_promql_number(q)}, {_selector(list(numbers))})"
        checks.append(_check(expr, list(numbers.items())))
    if nans:
        quantile = f"histogram_quantile({_promql_number(q)}, {_selector(nans)})"
        checks.append(_check(f"({quantile}) != bool ({quantile})", [(n, 1.0) for n in nans]))
    return checks


def our_expectations() -> Expectations:
    """What OUR function says, for every q and layout."""
    return {q: {layout.name: histogram_quantile(q, layout.as_buckets()) for layout in LAYOUTS} for q in QS}


def unit_test_file(expectations: Expectations) -> dict[str, Any]:
    checks = [check for q, expected in expectations.items() for check in _checks_for(q, expected)]
    test = {"interval": "1m", "input_series": _input_series(), "promql_expr_test": checks}
    return {"rule_files": [], "evaluation_interval": "1m", "tests": [test]}


def run_promtool(tmp_path: Path, content: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool is not on PATH: install Debian's `prometheus` package"
    path = tmp_path / "quantile_test.yml"
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    return subprocess.run(
        [promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )


def test_prometheus_agrees_with_every_quantile(tmp_path: Path) -> None:
    result = run_promtool(tmp_path, unit_test_file(our_expectations()))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_layouts_cover_both_numbers_and_nan() -> None:
    # Guards the test above against a layout table that silently asserts nothing interesting.
    values = [v for expected in our_expectations().values() for v in expected.values()]
    assert any(math.isnan(v) for v in values)
    assert any(math.isinf(v) for v in values)
    assert sum(1 for v in values if math.isfinite(v)) > 100


def _one_ulp_off(expectations: Expectations) -> Expectations:
    wrong = {q: dict(e) for q, e in expectations.items()}
    wrong[0.99]["request_60s"] = math.nextafter(wrong[0.99]["request_60s"], math.inf)
    return wrong


def _number_for_nan(expectations: Expectations) -> Expectations:
    wrong = {q: dict(e) for q, e in expectations.items()}
    wrong[0.5]["empty"] = 0.0
    return wrong


def _nan_for_number(expectations: Expectations) -> Expectations:
    wrong = {q: dict(e) for q, e in expectations.items()}
    wrong[0.5]["typical"] = math.nan
    return wrong


@pytest.mark.parametrize("corrupt", [_one_ulp_off, _number_for_nan, _nan_for_number])
def test_promtool_rejects_a_wrong_expectation(
    tmp_path: Path, corrupt: Callable[[Expectations], Expectations]
) -> None:
    result = run_promtool(tmp_path, unit_test_file(corrupt(our_expectations())))
    assert result.returncode != 0, result.stdout
    assert "histogram_quantile" in result.stdout + result.stderr
