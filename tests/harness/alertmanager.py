"""A real Alertmanager (Debian's 0.25) for tests, delivering to one webhook receiver with a bearer token.

Usage: `with Alertmanager(tmp_path, webhook_url, bearer_token="t") as am:` then `am.post_alerts([...])`,
`am.alerts()`; point a Prometheus at it with `Prometheus(..., alertmanager=am.url)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from sim.ports import free_port
from tests.harness.process import (
    HTTP_TIMEOUT,
    HarnessError,
    ManagedServer,
    ServerProcess,
    find_binary,
)

Json = dict[str, Any]


@dataclass(frozen=True)
class Route:
    """Grouping and timing of the single route; short defaults so tests see notifications within seconds."""

    group_by: Sequence[str] = ("alertname", "target")
    group_wait: str = "1s"
    group_interval: str = "1s"
    repeat_interval: str = "1h"


def alertmanager_config(webhook_url: str, bearer_token: str | None, route: Route) -> Json:
    """The alertmanager.yml the harness writes: one route, one webhook receiver."""
    webhook: Json = {"url": webhook_url, "send_resolved": True}
    if bearer_token is not None:
        webhook["http_config"] = {"authorization": {"type": "Bearer", "credentials": bearer_token}}
    return {
        "route": {
            "receiver": "proxybot",
            "group_by": list(route.group_by),
            "group_wait": route.group_wait,
            "group_interval": route.group_interval,
            "repeat_interval": route.repeat_interval,
        },
        "receivers": [{"name": "proxybot", "webhook_configs": [webhook]}],
    }


class Alertmanager(ManagedServer):
    """An Alertmanager process without HA gossip; a context manager that starts it and stops it."""

    def __init__(
        self,
        workdir: Path,
        webhook_url: str,
        bearer_token: str | None = None,
        *,
        route: Route | None = None,
        ready_timeout: float = 30.0,
    ) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ready_timeout = ready_timeout
        config = alertmanager_config(webhook_url, bearer_token, route or Route())
        self.config_path = workdir / "alertmanager.yml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self._process = ServerProcess(self._argv(), workdir / "alertmanager.log")

    def _argv(self) -> list[str]:
        storage = self.workdir / "alertmanager-data"
        storage.mkdir(exist_ok=True)
        return [
            find_binary("prometheus-alertmanager", "/usr/bin/prometheus-alertmanager"),
            f"--config.file={self.config_path}",
            f"--storage.path={storage}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            # Empty disables the HA gossip listener, so parallel tests never find each other as peers.
            "--cluster.listen-address=",
            "--log.level=warn",
        ]

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        try:
            response = httpx.request(method, f"{self.url}/api/v2/{path}", json=body, timeout=HTTP_TIMEOUT)
        except httpx.HTTPError as error:
            raise HarnessError(f"Alertmanager {method} /api/v2/{path} failed: {error}") from error
        if not response.is_success:
            raise HarnessError(
                f"Alertmanager {method} /api/v2/{path}: {response.status_code} {response.text}"
            )
        return response.json() if response.content else None

    def post_alerts(self, alerts: Sequence[Mapping[str, Any]]) -> None:
        """Push alerts as Prometheus would (`labels`, `annotations`, optional `startsAt`/`endsAt`)."""
        self._request("POST", "alerts", [dict(alert) for alert in alerts])

    def alerts(self) -> list[Json]:
        alerts: list[Json] = self._request("GET", "alerts")
        return alerts

    def status(self) -> Json:
        status: Json = self._request("GET", "status")
        return status
