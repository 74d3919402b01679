# syntax=docker/dockerfile:1
# proxybot: `docker build -t proxybot:0.1.0 .` from the repository root.
#
# Two stages: `build` installs the package and its pinned dependencies (requirements.lock as constraints)
# into a virtualenv; `runtime` copies only that virtualenv onto a clean slim image, so pip's build
# machinery and anything a wheel build needed never reach the image that runs.
#
# The base image, by tag and, for a reproducible build, by digest. The tag alone moves with every Debian and
# Python patch release; the digest names one image for good. Find today's with
# `docker buildx imagetools inspect python:3.11-slim-bookworm` (the "Digest:" line, the multi-platform
# index) and build with `--build-arg PYTHON_DIGEST=@sha256:<64 hex digits>`, or write it here. It is empty in
# the repository because it was written without registry access: an invented digest would fail every build.
# Both stages use the same image, so one digest pins both.
ARG PYTHON_TAG=3.11-slim-bookworm
ARG PYTHON_DIGEST=

FROM python:${PYTHON_TAG}${PYTHON_DIGEST} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/proxybot
WORKDIR /src
# Dependencies first, so a code change does not reinstall them: the lock pins every version that the
# test suite ran with. The package metadata (pyproject.toml, README.md) is all pip needs to resolve them.
# Constraints, not `--require-hashes`: a hashed lock needs every wheel's sha256 for every platform the image
# is built for, which only a resolver with index access can write (pip-compile --generate-hashes); the lock
# pins versions. It also lists the dev tools (pytest, ruff, mypy, hypothesis, kubernetes-validate): as
# constraints they only bound versions and install nothing, and `.` has no extras, so none reaches the image.
COPY pyproject.toml requirements.lock README.md ./
COPY bot ./bot
COPY handlers ./handlers
COPY config ./config
# sim/ (the simulated tenant clusters and the fake Slack) and trustme (the TLS of the simulated API servers,
# a runtime dependency in pyproject.toml for that reason) stay in the image on purpose: `docker run <image>
# demo` is how one evaluates proxybot without a cluster, and the console script reads the demo's scenario
# names from sim/ to build its argument parser, so every command imports a little of sim/. Only `demo` and
# `sim` run it (and import trustme); `serve` runs none of it.
COPY sim ./sim
# A regular (non-editable) install, so the runtime image needs nothing from /src.
RUN /opt/proxybot/bin/pip install --constraint requirements.lock . \
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
