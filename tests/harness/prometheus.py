"""A real Prometheus (Debian's 2.42) for tests: generated config and rule files, a free port, a query client.

Usage: `with Prometheus(tmp_path, [ScrapeJob(...)], rules={"proxy.yaml": text}) as prom:` then
`prom.alerts()`, `prom.query(expr)`, `prom.wait_until(check, timeout, what)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self, TypeVar

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
from tests.waiting import WaitTimeout, wait_until

T = TypeVar("T")
Json = dict[str, Any]


@dataclass(frozen=True)
class ScrapeJob:
    """One scrape job with a single static target."""

    name: str
    address: str
    metrics_path: str = "/metrics"
    scheme: str = "http"
    bearer_token: str | None = None
    ca_file: Path | None = None
    insecure_skip_verify: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    # The TLS server name to verify, when the address (an IP) is not a name in the certificate.
    server_name: str | None = None

    def to_config(self) -> Json:
        job: Json = {
            "job_name": self.name,
            "scheme": self.scheme,
            "metrics_path": self.metrics_path,
            "static_configs": [{"targets": [self.address], "labels": dict(self.labels)}],
        }
        if self.bearer_token is not None:
            job["authorization"] = {"type": "Bearer", "credentials": self.bearer_token}
        if self.scheme == "https":
            job["tls_config"] = self._tls_config()
        return job

    def _tls_config(self) -> Json:
        tls: Json = {"insecure_skip_verify": self.insecure_skip_verify}
        if self.ca_file is not None:
            tls["ca_file"] = str(self.ca_file)
        if self.server_name is not None:
            tls["server_name"] = self.server_name
        return tls


def prometheus_config(
    jobs: Sequence[ScrapeJob],
    rule_files: Sequence[Path],
    interval: str,
    alertmanager: str | None,
    raw_jobs: Sequence[Json] = (),
) -> Json:
    """The prometheus.yml the harness writes; `raw_jobs` are scrape configs written as given."""
    config: Json = {
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
        "rule_files": [str(path) for path in rule_files],
        "scrape_configs": [job.to_config() for job in jobs] + list(raw_jobs),
    }
    if alertmanager is not None:
        address = alertmanager.removeprefix("http://").rstrip("/")
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [address]}]}]}
    return config


class Prometheus(ManagedServer):
    """A Prometheus server process; a context manager that starts it, waits for `/-/ready`, and stops it."""

    def __init__(
        self,
        workdir: Path,
        jobs: Sequence[ScrapeJob] = (),
        rules: Mapping[str, str] | None = None,
        *,
        interval: str = "1s",
        alertmanager: str | None = None,
        ready_timeout: float = 30.0,
        raw_jobs: Sequence[Json] = (),
    ) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ready_timeout = ready_timeout
        rule_files = self._write_rules(rules or {})
        config = prometheus_config(jobs, rule_files, interval, alertmanager, raw_jobs)
        self.config_path = workdir / "prometheus.yml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self._process = ServerProcess(self._argv(), workdir / "prometheus.log")

    def _write_rules(self, rules: Mapping[str, str]) -> list[Path]:
        paths = []
        for name, text in rules.items():
            path = self.workdir / name
            path.write_text(text)
            paths.append(path)
        return paths

    def _argv(self) -> list[str]:
        data = self.workdir / "prometheus-data"
        data.mkdir(exist_ok=True)
        return [
            find_binary("prometheus", "/usr/bin/prometheus"),
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            # Alerts are sent once per evaluation that fires, then only every resend delay (1m by default);
            # the first send can precede Alertmanager discovery, so resend quickly in tests.
            "--rules.alert.resend-delay=1s",
            "--log.level=warn",
        ]

    def api(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        """GET `/api/v1/<path>` and return its `data`, raising HarnessError on any failure."""
        try:
            response = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=HTTP_TIMEOUT)
            body = response.json()
        except (httpx.HTTPError, ValueError) as error:
            raise HarnessError(f"Prometheus /api/v1/{path} failed: {error}") from error
        if body.get("status") != "success":
            raise HarnessError(f"Prometheus /api/v1/{path} answered {response.status_code}: {body}")
        return body["data"]

    def query(self, expr: str) -> list[Json]:
        """An instant query's result vector (each item has `metric` and `value`)."""
        data = self.api("query", {"query": expr})
        result: list[Json] = data["result"]
        return result

    def alerts(self, state: str | None = "firing") -> list[Json]:
        """Active alerts, by default only those firing (not pending)."""
        alerts: list[Json] = self.api("alerts")["alerts"]
        return [alert for alert in alerts if state is None or alert["state"] == state]

    def rule_groups(self) -> list[Json]:
        groups: list[Json] = self.api("rules")["groups"]
        return groups

    def targets(self) -> list[Json]:
        active: list[Json] = self.api("targets")["activeTargets"]
        return active

    def wait_until(self, check: Callable[[Self], T | None], timeout: float, what: str) -> T:
        """Poll `check(self)` until it returns non-None; the error names `what` and shows the log."""
        try:
            found = wait_until(lambda: check(self), timeout, what, interval=0.5)
        except WaitTimeout as error:
            raise HarnessError(f"{error}\nPrometheus log:\n{self.log_tail()}") from None
        assert found is not None  # wait_until returns only what is truthy
        return found

    def wait_for_scrapes(self, timeout: float = 30.0) -> None:
        """Wait until every scrape target has been scraped successfully at least once."""

        def all_up(prom: Self) -> bool | None:
            targets = prom.targets()
            return (bool(targets) and all(target["health"] == "up" for target in targets)) or None

        self.wait_until(all_up, timeout, "every scrape target to be up")
