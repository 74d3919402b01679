# Sourced by scripts/test.sh and scripts/demo.sh, or by you (`source scripts/venv.sh` from the repository
# root): a .venv with the pinned packages, on PATH. A failure returns 1 instead of exiting, so sourcing it
# never closes your shell.
if [ ! -f pyproject.toml ] || [ ! -f scripts/venv.sh ]; then
  echo "scripts/venv.sh: source it from the repository root (where pyproject.toml is), not $PWD" >&2
  return 1 2>/dev/null || exit 1
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv" >&2
  if ! "$PY" -m venv .venv; then
    echo "scripts/venv.sh: '$PY -m venv .venv' failed (on Debian: apt-get install python3-venv)" >&2
    return 1 2>/dev/null || exit 1
  fi
fi
stamp=.venv/.installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements.lock -nt "$stamp" ]; then
  echo "== installing Python packages (first run only)" >&2
  if ! .venv/bin/pip install -q --disable-pip-version-check -c requirements.lock -e '.[dev]' \
      >.venv/pip.log 2>&1; then
    cat .venv/pip.log >&2
    echo "scripts/venv.sh: installing the Python packages failed (the log above is .venv/pip.log)" >&2
    return 1 2>/dev/null || exit 1
  fi
  touch "$stamp"
fi
export PATH="$PWD/.venv/bin:$PATH"
