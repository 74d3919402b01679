"""Benchmark: our `/metrics/syncer` parse against prometheus_client's full parse of the same page.

Run from the repository root: `.venv/bin/python bench/parse.py`. Both parsers run in this process on the same
20 000-line page; the proxy series they read must be identical or the script fails before printing a ratio.
The last line is `speedup_vs_prometheus_client: <median ratio>`.
"""

from __future__ import annotations

import gc
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot` and `bench`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client.parser import text_string_to_metric_families

from bench.syncer_page import build_page
from bot.domain.parser import parse_syncer
from bot.domain.snapshot import PREFIX, ProxySnapshot

# One sample, comparable across parsers: name and sorted labels, with `le` as a float's repr.
SampleKey = tuple[str, tuple[tuple[str, str], ...]]

ROUNDS = 7
OURS_PER_ROUND = 5


def full_reference_parse(text: str) -> list[tuple[str, dict[str, str], float]]:
    """prometheus_client's parse of the whole page, every family consumed."""
    return [
        (s.name, s.labels, float(s.value))
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def reference_proxy_samples(text: str) -> dict[SampleKey, float]:
    out: dict[SampleKey, float] = {}
    for name, labels, value in full_reference_parse(text):
        if name.startswith(PREFIX):
            out[name, _key_labels(name, labels)] = value
    return out


def our_proxy_samples(snapshot: ProxySnapshot) -> dict[SampleKey, float]:
    """The snapshot flattened back into page samples."""
    out: dict[SampleKey, float] = {}
    for name, series in snapshot.samples.items():
        for labels, value in series.items():
            out[name, _key_labels(name, dict(labels))] = value
    for family, hists in snapshot.histograms.items():
        for labels, h in hists.items():
            for b in h.buckets:
                bucket = f"{family}_bucket"
                out[bucket, _key_labels(bucket, {**dict(labels), "le": repr(b.le)})] = b.count
            out[f"{family}_sum", tuple(sorted(labels))] = h.sum
            out[f"{family}_count", tuple(sorted(labels))] = h.count
    return out


def _key_labels(name: str, labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    if name.endswith("_bucket") and "le" in labels:
        labels = {**labels, "le": repr(float(labels["le"]))}
    return tuple(sorted(labels.items()))


def differences(ours: dict[SampleKey, float], reference: dict[SampleKey, float]) -> list[str]:
    """Every sample on which the two parses disagree (NaN equals NaN)."""
    problems = [f"only ours: {k}" for k in ours.keys() - reference.keys()]
    problems += [f"only prometheus_client: {k}" for k in reference.keys() - ours.keys()]
    for key in ours.keys() & reference.keys():
        a, b = ours[key], reference[key]
        if not (a == b or (math.isnan(a) and math.isnan(b))):
            problems.append(f"value differs for {key}: ours {a!r}, prometheus_client {b!r}")
    return problems


def timed(run: Callable[[], object]) -> float:
    gc.collect()  # garbage left by the previous run is not this run's cost
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def timings(page: str, rounds: int = ROUNDS) -> tuple[list[float], list[float]]:
    """Both parsers, interleaved round by round, so a noisy neighbour slows both alike."""
    ours: list[float] = []
    reference: list[float] = []
    for _ in range(rounds):
        reference.append(timed(lambda: full_reference_parse(page)))
        ours.extend(timed(lambda: parse_syncer(page)) for _ in range(OURS_PER_ROUND))
    return ours, reference


def page_differences(page: str) -> list[str]:
    """Where our parse of the page and prometheus_client's disagree on a proxy sample (none: identical)."""
    return differences(our_proxy_samples(parse_syncer(page)), reference_proxy_samples(page))


def proxy_line_count(page: str) -> int:
    return sum(1 for line in page.splitlines() if line.startswith(PREFIX))


def main() -> int:
    page = build_page()
    lines = page.count("\n")
    proxy_lines = proxy_line_count(page)
    problems = page_differences(page)
    if problems:
        print(f"FAIL: the parses differ on {len(problems)} samples", file=sys.stderr)
        for p in problems[:20]:
            print("  " + p, file=sys.stderr)
        return 1
    ours, reference = timings(page)
    print(f"page: {lines} lines, {proxy_lines} proxy sample lines, {len(page) / 1e6:.2f} MB")
    print("results: identical on every vcluster_proxy_* sample")
    for label, t in (("parse_syncer", ours), ("prometheus_client full parse", reference)):
        best, median = min(t) * 1e3, statistics.median(t) * 1e3
        print(f"{label:>30}: best {best:8.2f} ms, median {median:8.2f} ms ({len(t)} runs)")
    print(f"speedup (best/best): {min(reference) / min(ours):.1f}")
    print(f"speedup_vs_prometheus_client: {statistics.median(reference) / statistics.median(ours):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
