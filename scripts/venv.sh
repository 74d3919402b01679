# Sourced by scripts/test.sh and scripts/demo.sh: a .venv with the pinned packages, on PATH.
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements.lock -nt "$stamp" ]; then
  echo "== installing Python packages (first run only)" >&2
  if ! .venv/bin/pip install -q --disable-pip-version-check -c requirements.lock -e '.[dev]' \
      >.venv/pip.log 2>&1; then
    cat .venv/pip.log >&2
    exit 1
  fi
  touch "$stamp"
fi
export PATH="$PWD/.venv/bin:$PATH"
