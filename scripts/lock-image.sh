#!/usr/bin/env bash
# Regenerate requirements-image.lock: what the container image installs, every file pinned by sha256.
#
# The image installs `pip install --require-hashes --only-binary=:all: -r requirements-image.lock`, so the
# lock must name the runtime dependencies (pyproject.toml's `dependencies`, no extras) and the build
# backend (`--no-build-isolation` builds proxybot with the locked setuptools), at the versions the tests ran
# with (requirements.lock, as constraints), with the hash of every wheel for every platform (`--universal`:
# amd64 and arm64 images alike). It needs index access; uv is installed into a throwaway venv for it.
# Run it after changing pyproject.toml's dependencies or requirements.lock.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools"
"$tools/bin/pip" install -q uv
printf 'setuptools\nwheel\n' >"$tools/build.in"
"$tools/bin/uv" pip compile pyproject.toml "$tools/build.in" --constraint requirements.lock \
  --generate-hashes --universal --python-version 3.11 --no-header --quiet --output-file requirements-image.lock
# The throwaway path of the build requirements is not worth keeping in the lock's comments.
sed -i "s|-r $tools/build.in|proxybot's build backend (scripts/lock-image.sh)|" requirements-image.lock
