#!/usr/bin/env bash
# Pin the Dockerfile's base image to the digest the registry serves for its tag today.
#
# The digest is the tag's multi-platform index (what `docker pull` resolves first), so amd64 and arm64
# builds pin alike. Needs registry access and `docker buildx` (or `crane`). Rebuild and run the tests after.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=$(sed -n 's/^ARG PYTHON_TAG=//p' Dockerfile)
image="python:$tag"
if docker buildx version >/dev/null 2>&1; then
  digest=$(docker buildx imagetools inspect "$image" --format '{{json .Manifest.Digest}}' | tr -d '"')
elif command -v crane >/dev/null 2>&1; then
  digest=$(crane digest "$image")
else
  echo "pin-base-image: needs docker buildx or crane" >&2
  exit 2
fi
if ! [[ $digest =~ ^sha256:[0-9a-f]{64}$ ]]; then
  echo "pin-base-image: the registry answered no digest for $image: '$digest'" >&2
  exit 1
fi
sed -i "s|^ARG PYTHON_DIGEST=.*|ARG PYTHON_DIGEST=@$digest|" Dockerfile
echo "$image pinned to $digest"
