#!/usr/bin/env bash
# The embedded default: `proxybot demo` on a fresh machine (sets up .venv on first run). Args go to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
exec proxybot demo "$@"
