"""Benchmark: how cost grows with the load: storm, digest and parse, each at several sizes in one run.

Run from the repository root: `.venv/bin/python bench/scale.py [--only storm|digest|parse] [--quick]`.
Per size it prints the time, the peak resident memory and the growth ratio against the smallest size
(the baseline, measured in the same run); `--quick` runs one small size of each part (a smoke run).

- storm (bench/scale_storm.py): 1 000, 5 000 and 10 000 alerts over 500, 2 500 and 5 000 targets into a
  fresh `proxybot serve` each (simulator, fake Slack): every webhook accepted (p99 per size), every
  notification processed, the storm summary's first post and the time its count in Slack is complete.
  Holds when 10x the alerts cost at most 12x the time (processing wall time and serve's CPU seconds) and
  serve's peak RSS (VmHWM) stays at most 400 MB at the largest size.
- digest (bench/digest.py's fleet and run): 200, 1 000 and 2 000 clusters x 5 targets, one hung. Its linear
  part is measured first, the smallest fleet without the hung cluster (seconds per cluster); holds when
  each size takes at most the hung cluster's timeout plus 1.2x that linear part.
- parse (bench/parse.py's comparison): 20 000 and 200 000-line pages (10 and 100 targets), results
  identical to prometheus_client's and the speedup against it at both (holds at >= 10x). The growth of
  our parse is printed against the size's; it holds when it is at most 1.2x prometheus_client's growth,
  the baseline parsed alongside, since a page 10x as big costs more per line in any Python parser.

Memory of the in-process parts is this process's VmHWM, reset before each size (bench/procstat.py):
`peak` is the mark, `rise` the peak above the RSS just before the measured work (the digest's fake
clusters hold their pages, which `peak` includes and `rise` does not); the digest's worker processes
are summed apart. The last lines are `scale_<part>_ok: yes|no`; the exit status is 0 when all hold.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot` and `tests`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client.parser import text_string_to_metric_families

from bench.digest import HUNG, build_fleet, run_digest
from bench.parse import page_differences, proxy_line_count, timings
from bench.procstat import SELF, peak_rss_mb, reset_peak, rss_mb, total_peak_rss_mb
from bench.scale_storm import RATE, StormFigures, storm_at
from bench.syncer_page import build_page
from bot.digest.fleet import DEFAULT_CLUSTER_TIMEOUT
from bot.digest.pool import digest_pool, warm_up
from bot.domain.parser import parse_syncer
from sim.server import SimServer
from tests.harness.descendants import descendants

STORM_TARGETS = (500, 2500, 5000)
DIGEST_CLUSTERS = (200, 1000, 2000)
PAGE_LINES = (20_000, 200_000)
QUICK_STORM_TARGETS = (100,)
QUICK_DIGEST_CLUSTERS = (20,)
QUICK_PAGE_LINES = (2_000,)
GROWTH_SLACK = 1.2  # 10x the load may cost 12x
STORM_RSS_LIMIT_MB = 400.0
PARSE_ROUNDS = 3
SPEEDUP_GOAL = 10.0  # the product's bar: our parse against prometheus_client's full parse
PARTS = ("storm", "digest", "parse")


def growth(values: Sequence[float | None]) -> list[float | None]:
    """Each value against the first (None where either is missing or the first is 0)."""
    base = values[0]
    return [None if v is None or not base else v / base for v in values]


def linear(sizes: Sequence[int], costs: Sequence[float | None]) -> bool:
    """Every size's cost grew at most GROWTH_SLACK times as fast as the size, against the smallest."""
    return all(
        g is not None and g <= GROWTH_SLACK * size / sizes[0]
        for size, g in zip(sizes, growth(costs), strict=True)
    )


def cell(value: float | int | None, digits: int = 2) -> str:
    if value is None:
        return "never"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def table(heads: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    for line in (heads, *rows):
        print("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))


def verdict(part: str, ok: bool) -> bool:
    print(f"scale_{part}_ok: {'yes' if ok else 'no'}")
    return ok


# -- storm ---------------------------------------------------------------------------------------------------


def storm_part(targets: Sequence[int], workdir: Path) -> bool:
    print(f"== storm: 2 alerts per target, {RATE:g} webhooks/s, a fresh `proxybot serve` per size")
    runs: list[StormFigures] = []
    with SimServer(scenario="healthy", speed=20) as sim:
        for n in targets:
            runs.append(storm_at(n, sim, workdir / f"storm-{n}"))
            print(f"   {runs[-1].alerts} alerts done", flush=True)
    wall = growth([r.processed_after for r in runs])
    cpu = growth([r.serve_cpu for r in runs])
    heads = ["alerts", "targets", "send_s", "refused", "lost", "p99_ms", "processed_s", "backlog_s"]
    heads += ["summary_s", "summary_all_s", "cpu_s", "rss_peak_MB", "workers_MB", "growth_wall", "growth_cpu"]
    rows = [
        [
            *(str(r.alerts), str(r.targets), cell(r.send_seconds, 1), str(r.refused), str(r.lost)),
            *(cell(r.p99_ms, 1), cell(r.processed_after), cell(r.backlog), cell(r.summary_after)),
            *(cell(r.summary_complete_after), cell(r.serve_cpu), cell(r.serve_peak_mb, 0)),
            *(cell(r.workers_peak_mb, 0), cell(w) + "x", cell(c) + "x"),
        ]
        for r, w, c in zip(runs, wall, cpu, strict=True)
    ]
    table(heads, rows)
    sizes = [r.alerts for r in runs]
    grows = linear(sizes, [r.processed_after for r in runs]) and linear(sizes, [r.serve_cpu for r in runs])
    rss_ok = runs[-1].serve_peak_mb <= STORM_RSS_LIMIT_MB
    print(f"every webhook accepted, none lost, every alert in the summary's count: {all(r.ok for r in runs)}")
    print(f"growth at most {GROWTH_SLACK:g}x the size's (wall and CPU): {grows}")
    print(f"serve peak RSS at {runs[-1].alerts} alerts <= {STORM_RSS_LIMIT_MB:g} MB: {rss_ok}")
    return verdict("storm", all(r.ok for r in runs) and grows and rss_ok)


# -- digest --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DigestFigures:
    clusters: int
    targets: int
    seconds: float
    reads_done: float
    hung_seconds: float | None  # None: no hung cluster in this fleet
    hung_timed_out: bool
    peak_mb: float
    rise_mb: float
    workers_mb: float


async def digest_at(clusters: int, hung: str | None) -> DigestFigures:
    """One cold digest of a fleet, on a pool warmed first as `serve` warms it at startup."""
    fleet = build_fleet(clusters, hung)
    gc.collect()
    pool = digest_pool()
    try:
        await warm_up(pool)
        before = rss_mb()
        reset_peak()
        run = await run_digest(fleet, pool)
        peak = peak_rss_mb()
        workers = total_peak_rss_mb(p.pid for p in descendants(SELF))
    finally:
        pool.shutdown()
    hung_seconds = None if hung is None else run.seconds[hung]
    count = len(run.digest.targets)
    return DigestFigures(
        *(clusters, count, run.wall, run.read_seconds, hung_seconds, hung in run.timed_out),
        *(peak, peak - before, workers),
    )


def hung_in(clusters: int) -> str:
    """The hung cluster, as far into the fleet as bench/digest.py's is into its 200."""
    return f"cluster-{clusters * int(HUNG.removeprefix('cluster-')) // 200}"


def digest_part(sizes: Sequence[int]) -> bool:
    where = ", ".join(hung_in(n) for n in sizes)
    print(f"== digest: clusters x 5 targets, one hung ({where}; timeout {DEFAULT_CLUSTER_TIMEOUT:g} s)")
    base = asyncio.run(digest_at(sizes[0], None))
    per_cluster = base.seconds / base.clusters
    cost = f"{base.seconds:.2f} s = {1000 * per_cluster:.2f} ms a cluster"
    print(f"linear part: {sizes[0]} clusters, none hung: {cost}")
    runs: list[DigestFigures] = []
    for n in sizes:
        runs.append(asyncio.run(digest_at(n, hung_in(n))))
        print(f"   {n} clusters done", flush=True)
    limits = [DEFAULT_CLUSTER_TIMEOUT + GROWTH_SLACK * per_cluster * r.clusters for r in runs]
    heads = ["clusters", "targets", "seconds", "reads_s", "hung_s", "limit_s", "ms/cluster", "growth"]
    heads += ["rss_peak_MB", "rss_rise_MB", "workers_MB"]
    rows = [
        [
            *(str(r.clusters), str(r.targets), cell(r.seconds), cell(r.reads_done), cell(r.hung_seconds)),
            *(cell(limit), cell(1000 * r.seconds / r.clusters), cell(g) + "x"),
            *(cell(r.peak_mb, 0), cell(r.rise_mb, 0), cell(r.workers_mb, 0)),
        ]
        for r, limit, g in zip(runs, limits, growth([r.seconds for r in runs]), strict=True)
    ]
    table(heads, rows)
    within = all(r.seconds <= limit for r, limit in zip(runs, limits, strict=True))
    hung_ok = all(r.hung_timed_out for r in runs)
    print(f"hung cluster reported unreachable at every size: {hung_ok}")
    print(f"each size within the timeout + {GROWTH_SLACK:g}x the linear part: {within}")
    return verdict("digest", within and hung_ok)


# -- parse ---------------------------------------------------------------------------------------------------


def rise_of(work: Callable[[], object]) -> float:
    """MB of resident memory `work` needed above what was resident before it."""
    gc.collect()
    before = rss_mb()
    reset_peak()
    work()
    return peak_rss_mb() - before


@dataclass(frozen=True)
class ParseFigures:
    lines: int
    proxy_lines: int
    megabytes: float
    problems: list[str]
    ours_ms: float  # medians
    theirs_ms: float
    ours_rise_mb: float
    theirs_rise_mb: float


def parse_at(lines: int, rounds: int) -> ParseFigures:
    """One page of `lines` lines (a target per 2 000 lines): compared, timed, and its memory."""
    page = build_page(targets=max(1, lines // 2000), total_lines=lines)
    problems = page_differences(page)
    ours, reference = timings(page, rounds)
    return ParseFigures(
        *(lines, proxy_line_count(page), len(page) / 1e6, problems),
        *(1000 * statistics.median(ours), 1000 * statistics.median(reference)),
        rise_of(lambda: parse_syncer(page)),
        rise_of(lambda: [f.samples for f in text_string_to_metric_families(page)]),
    )


def parse_part(sizes: Sequence[int], rounds: int) -> bool:
    print(f"== parse: /metrics/syncer pages, ours vs prometheus_client's full parse, {rounds} rounds")
    runs: list[ParseFigures] = []
    for lines in sizes:
        runs.append(parse_at(lines, rounds))
        for problem in runs[-1].problems[:5]:
            print(f"   differs: {problem}")
        print(f"   {lines} lines done", flush=True)
    ours, theirs = [r.ours_ms for r in runs], [r.theirs_ms for r in runs]
    heads = ["lines", "proxy_lines", "MB", "ours_ms", "prom_client_ms", "speedup", "growth_ours"]
    heads += ["growth_prom", "ours_rise_MB", "prom_rise_MB"]
    rows = [
        [
            *(str(r.lines), str(r.proxy_lines), cell(r.megabytes), cell(r.ours_ms, 1)),
            *(cell(r.theirs_ms, 1), cell(r.theirs_ms / r.ours_ms, 1) + "x", cell(g_ours) + "x"),
            *(cell(g_theirs) + "x", cell(r.ours_rise_mb, 0), cell(r.theirs_rise_mb, 0)),
        ]
        for r, g_ours, g_theirs in zip(runs, growth(ours), growth(theirs), strict=True)
    ]
    table(heads, rows)
    identical = not any(r.problems for r in runs)
    fast = all(r.theirs_ms >= SPEEDUP_GOAL * r.ours_ms for r in runs)
    ours_growth, theirs_growth = ours[-1] / ours[0], theirs[-1] / theirs[0]
    grows = linear(list(sizes), list(ours))
    print(f"results identical to prometheus_client at every size: {identical}")
    print(f"at least {SPEEDUP_GOAL:g}x faster than prometheus_client at every size: {fast}")
    print(f"our parse grows at most {GROWTH_SLACK:g}x the size's: {grows}")
    # A big page costs more per line in any parser (bigger dicts, more objects, colder caches): the
    # reference measured in the same run says how much of our growth is the machine's.
    relative = ours_growth <= GROWTH_SLACK * theirs_growth
    against = f"({ours_growth:.2f} vs {theirs_growth:.2f})"
    print(f"our growth at most {GROWTH_SLACK:g}x prometheus_client's {against}: {relative}")
    return verdict("parse", identical and fast and relative)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", choices=PARTS, help="run one part only")
    parser.add_argument("--quick", action="store_true", help="one small size of each part (a smoke run)")
    args = parser.parse_args(argv)
    parts = [args.only] if args.only else list(PARTS)
    results: list[bool] = []
    with tempfile.TemporaryDirectory(prefix="proxybot-bench-scale-") as workdir:
        if "storm" in parts:
            results.append(storm_part(QUICK_STORM_TARGETS if args.quick else STORM_TARGETS, Path(workdir)))
        if "digest" in parts:
            results.append(digest_part(QUICK_DIGEST_CLUSTERS if args.quick else DIGEST_CLUSTERS))
        if "parse" in parts:
            sizes = QUICK_PAGE_LINES if args.quick else PAGE_LINES
            results.append(parse_part(sizes, 1 if args.quick else PARSE_ROUNDS))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
