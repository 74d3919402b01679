"""Read-only access to a tenant cluster's API server through the official `kubernetes` client (aio).

Only GET is exposed, only on an `ApiPath` (built from validated parts), and every call has a timeout.
Transport errors and HTTP failures become `ClusterError` with a kind the diagnosis can explain.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes.aio import config as kube_config
from kubernetes.aio.client import ApiClient, Configuration

from bot.domain.paths import ApiPath, syncer_metrics_path
from bot.errors import ClusterError

_STATUS_KINDS = {401: "unauthorized", 403: "forbidden", 404: "not_found"}
# The loader is not thread-safe: it caches the temp files it writes for inline certificates by content,
# and names a file in that cache before writing it, so a second load of the same certificate could get
# the file still empty. One load at a time, then, on a thread of its own: a slow credential plugin must
# not hold threads of the loop's default pool, which parses metrics pages and webhooks meanwhile.
_LOADER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kubeconfig")


@dataclass(frozen=True, slots=True)
class RawResponse:
    """What one GET returned."""

    status: int
    body: bytes
    headers: Mapping[str, str]
    seconds: float

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class KubeReader:
    """GET-only client for one cluster (a client tenant cluster, or a target for direct requests)."""

    def __init__(self, name: str, api: ApiClient) -> None:
        self.name = name
        self._api = api

    @classmethod
    async def connect(cls, name: str, kubeconfig: Path, context: str | None = None) -> KubeReader:
        """A reader from a kubeconfig file and optional context; a bad file is a `bad_config` error.

        The file is read and parsed on a worker thread (it is blocking I/O, and a credential plugin may
        take seconds); only the client itself is made on the event loop, which its session belongs to.
        """
        try:
            loop = asyncio.get_running_loop()
            configuration = await loop.run_in_executor(_LOADER, _load_configuration, kubeconfig, context)
        except Exception as err:  # the loader raises ConfigException, OSError, yaml errors, ...
            raise ClusterError(name, "bad_config", f"cannot load kubeconfig {kubeconfig}: {err}") from None
        return cls(name, ApiClient(configuration=configuration))

    async def close(self) -> None:
        await self._api.close()  # type: ignore[no-untyped-call]

    async def get(self, path: ApiPath, *, timeout: float) -> RawResponse:
        """GET one path; any status is returned, transport failures raise `ClusterError`."""
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout):
                return await self._get(path, timeout, started)
        except TimeoutError:
            raise ClusterError(
                self.name, "timeout", f"GET {path.path} timed out after {timeout:g}s"
            ) from None
        except (aiohttp.ClientError, OSError) as err:
            raise ClusterError(
                self.name, "unreachable", f"GET {path.path} failed: {_describe(err)}"
            ) from None

    async def _get(self, path: ApiPath, timeout: float, started: float) -> RawResponse:
        method, url, headers, _, _ = await self._api.param_serialize(
            "GET",
            path.path,
            query_params=list(path.query) or None,
            header_params={"Accept": "*/*"},
            auth_settings=["BearerToken"],
        )
        response: Any = await self._api.call_api(
            method, url, header_params=headers, _request_timeout=aiohttp.ClientTimeout(total=timeout)
        )
        body = await response.read()
        return RawResponse(response.status, body, dict(response.headers), time.monotonic() - started)

    async def get_ok(self, path: ApiPath, *, timeout: float) -> RawResponse:
        """GET one path and raise `ClusterError` unless it answered 2xx."""
        response = await self.get(path, timeout=timeout)
        if 200 <= response.status < 300:
            return response
        kind = _STATUS_KINDS.get(response.status, "http")
        raise ClusterError(self.name, kind, f"GET {path.path} answered {response.status}{_hint(path, kind)}")

    async def syncer_metrics(self, *, timeout: float) -> str:
        """The text of `/metrics/syncer` (the proxy's metrics)."""
        return (await self.get_ok(syncer_metrics_path(), timeout=timeout)).text


def _load_configuration(kubeconfig: Path, context: str | None) -> Configuration:
    """The client configuration of one kubeconfig context (runs on a worker thread, on its own loop)."""
    configuration = Configuration()
    load = kube_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig), context=context, client_configuration=configuration
    )
    asyncio.run(load)
    return configuration


def _hint(path: ApiPath, kind: str) -> str:
    if path != syncer_metrics_path():
        return ""
    return {
        "not_found": ": this vCluster is older than v0.37 (the proxy metrics path does not exist yet)",
        "forbidden": ": the bot's identity lacks `get` on the non-resource URL /metrics/syncer",
        "unauthorized": ": the kubeconfig's credentials were rejected",
    }.get(kind, "")


def _describe(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return text if len(text) <= 300 else text[:300] + "…"
