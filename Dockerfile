# syntax=docker/dockerfile:1
# proxybot: `docker build -t proxybot:0.1.0 .` from the repository root.
#
# Two stages: `build` installs the package and its pinned dependencies (requirements.lock as constraints)
# into a virtualenv; `runtime` copies only that virtualenv onto a clean slim image, so pip's build
# machinery and anything a wheel build needed never reach the image that runs.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/proxybot
WORKDIR /src
# Dependencies first, so a code change does not reinstall them: the lock pins every version that the
# test suite ran with. The package metadata (pyproject.toml, README.md) is all pip needs to resolve them.
COPY pyproject.toml requirements.lock README.md ./
COPY bot ./bot
COPY handlers ./handlers
COPY config ./config
COPY sim ./sim
# A regular (non-editable) install, so the runtime image needs nothing from /src.
RUN /opt/proxybot/bin/pip install --constraint requirements.lock . \
    && /opt/proxybot/bin/proxybot --help >/dev/null

FROM ${PYTHON_IMAGE} AS runtime
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
