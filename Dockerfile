# syntax=docker/dockerfile:1
# proxybot: `docker build -t proxybot:0.1.0 .` from the repository root.
#
# Two stages: `build` installs the package and its dependencies (requirements-image.lock, every file pinned
# by hash) into a virtualenv; `runtime` copies only that virtualenv onto a clean slim image, so pip's build
# machinery and anything a wheel build needed never reach the image that runs.
#
# The base image, by tag and by digest: the tag alone moves with every Debian and Python patch release; the
# digest names one image for good. This one is the digest recorded for python:3.11-slim-bookworm on
# 2026-08-24; the machine this was written on has no registry access, so it was not checked there. Before a
# first build, and to move to a newer image: `scripts/pin-base-image.sh` asks the registry for the tag's
# multi-platform index digest and rewrites the line below (or build with
# `--build-arg PYTHON_DIGEST=@sha256:<64 hex digits>`). Both stages use the same image: one digest pins both.
ARG PYTHON_TAG=3.11-slim-bookworm
ARG PYTHON_DIGEST=@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91

FROM python:${PYTHON_TAG}${PYTHON_DIGEST} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/proxybot
WORKDIR /src
# Dependencies first, so a code change does not reinstall them. requirements-image.lock (written by
# scripts/lock-image.sh) names every distribution the image installs, at the versions the test suite ran
# with (requirements.lock), each with the sha256 of every wheel for every platform: pip refuses a file whose
# hash is not listed (--require-hashes) and builds nothing from source (--only-binary), so no code runs at
# build time that the lock did not name. It holds the runtime dependencies and the build backend only:
# none of the dev tools (pytest, ruff, mypy, ...) reaches the image.
COPY requirements-image.lock ./
RUN /opt/proxybot/bin/pip install --require-hashes --only-binary=:all: -r requirements-image.lock
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY handlers ./handlers
COPY config ./config
# sim/ (the simulated tenant clusters and the fake Slack) and trustme (the TLS of the simulated API servers,
# a runtime dependency in pyproject.toml for that reason) stay in the image on purpose: `docker run <image>
# demo` is how one evaluates proxybot without a cluster, and the console script reads the demo's scenario
# names from sim/ to build its argument parser, so every command imports a little of sim/. Only `demo` and
# `sim` run it (and import trustme); `serve` runs none of it.
COPY sim ./sim
# proxybot itself: a regular (non-editable) install, so the runtime image needs nothing from /src. Its
# dependencies are all installed above (--no-deps), and it is built with the locked setuptools
# (--no-build-isolation), so this step fetches nothing.
RUN /opt/proxybot/bin/pip install --no-deps --no-build-isolation . \
    && /opt/proxybot/bin/pip check \
    && /opt/proxybot/bin/proxybot --help >/dev/null

FROM python:${PYTHON_TAG}${PYTHON_DIGEST} AS runtime
LABEL org.opencontainers.image.title="proxybot" \
      org.opencontainers.image.description="Slack chat-ops bot for the vCluster Platform resource proxy" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/proxybot /opt/proxybot
# The store lives on a volume here (store.url: sqlite:////var/lib/proxybot/proxybot.db). matplotlib and
# the kubeconfig loader write only under /tmp, so the root filesystem can be mounted read-only.
ENV PATH=/opt/proxybot/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MPLCONFIGDIR=/tmp/matplotlib \
    PROXYBOT_CONFIG=/etc/proxybot/proxybot.yaml
RUN install -d -o 10001 -g 10001 -m 0750 /var/lib/proxybot
# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 10001:10001
WORKDIR /var/lib/proxybot
VOLUME ["/var/lib/proxybot"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4).status != 200)"]
ENTRYPOINT ["proxybot"]
# 0.0.0.0: inside a container the loopback default (server.host) would be unreachable from outside.
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
