#!/usr/bin/env bash
# The one command that runs every check: lint, format, types, tests.
# It sets up what it needs on a fresh machine: Debian packages (when root), a venv, the pinned deps.
set -euo pipefail
cd "$(dirname "$0")/.."

# PostgreSQL's server programs live in /usr/lib/postgresql/<version>/bin on Debian, not on PATH. The tests
# start a throwaway server of their own (sim/postgres.py) and never use the cluster the package may start.
have_initdb() {
  command -v initdb >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

need_debs=()
command -v promtool >/dev/null 2>&1 || need_debs+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || need_debs+=(prometheus-alertmanager)
have_initdb || need_debs+=(postgresql)
# The demo page's tests open it in a real browser; the emoji font draws the messages' marks (🔴, 🌩️) in the
# README's pictures. Neither is needed to run the demo.
command -v chromium >/dev/null 2>&1 || need_debs+=(chromium)
dpkg -s fonts-noto-color-emoji >/dev/null 2>&1 || need_debs+=(fonts-noto-color-emoji)
if [ ${#need_debs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing Debian packages: ${need_debs[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_debs[@]}" >/dev/null
  else
    echo "missing ${need_debs[*]}: install them (apt-get install ${need_debs[*]}) or run as root" >&2
    exit 1
  fi
fi

source scripts/venv.sh
# Bytecode is written, also where the machine sets PYTHONDONTWRITEBYTECODE (these do): the suite starts
# hundreds of Python processes (bots, the CLI, Alertmanager's stand-in, inner pytest sessions), and each
# pytest-xdist worker rewrites every test module's asserts; without the caches each compiles all of it
# again (collecting took 11 s of CPU per worker, 5 s with them).
unset PYTHONDONTWRITEBYTECODE

echo "== ruff check";        ruff check .
echo "== ruff format";       ruff format --check .
echo "== lint-imports";      lint-imports
# mypy runs beside pytest, at the lowest priority, and its verdict is printed after pytest's: on a fresh
# clone (no cache) it takes 40 s of a CPU, which the suite, waiting on timers and processes a quarter of
# the time, leaves idle. Either failing fails the run.
mypy_log=$(mktemp)
nice -n 19 mypy --strict bot handlers config sim bench >"$mypy_log" 2>&1 &
mypy_pid=$!
trap 'kill "$mypy_pid" 2>/dev/null || true; rm -f "$mypy_log"' EXIT
# In parallel (pytest-xdist): most of the suite's time is spent waiting on real timers and processes, so
# more workers than cores finish sooner (on 2 cores: 4 workers kept the CPUs 64% busy and took 590 s,
# 6 workers 80% and 485 s, the same tests). A module's tests run on one worker (`loadscope`), so what its
# module-scoped fixtures start (a simulator, a real Prometheus, the demo's tour) starts once; the
# `loadgroup` mode would be finer, but pytest-xdist 3.8 does not group under pytest 9 (its nodeid
# suffix is never added). Modules go out in collection order (tests/conftest.py puts the longest
# first), not by test count. The 20 slowest tests are listed at the end, so they stay visible.
# TEST_WORKERS=0 runs it in one process.
echo "== pytest"
pytest_rc=0
pytest -n "${TEST_WORKERS:-6}" --dist loadscope --no-loadscope-reorder --durations=20 "$@" || pytest_rc=$?
echo "== mypy --strict"
mypy_rc=0
wait "$mypy_pid" || mypy_rc=$?
cat "$mypy_log"
[ "$pytest_rc" = 0 ] && [ "$mypy_rc" = 0 ]
