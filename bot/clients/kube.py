"""Read-only access to a tenant cluster's API server through the official `kubernetes` client (aio).

Only GET is exposed, only on an `ApiPath` (built from validated parts), and every call has a timeout.
Transport errors and HTTP failures become `ClusterError` with a kind the diagnosis can explain.

The client's kubeconfig loader reads a user's `tokenFile` once, at load (its `refresh_token` only renews
gcp and exec credentials), while a projected ServiceAccount token is rotated by kubelet and expires: a
reader whose user has a `tokenFile` (and nothing that takes precedence: `token`, `exec`, an auth
provider) re-reads the file as it is used (`bot.clients.credentials.CredentialFile`). Nothing is ever
written back into a kubeconfig: the loader gets no persister.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from kubernetes.aio.client import ApiClient, Configuration
from kubernetes.aio.config import kube_config

from bot.clients.credentials import CredentialFile
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

    def __init__(self, name: str, api: ApiClient, *, timer: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self._api = api
        self._timer = timer  # times each GET (`RawResponse.seconds`)

    @classmethod
    async def connect(
        cls,
        name: str,
        kubeconfig: Path,
        context: str | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        timer: Callable[[], float] = time.monotonic,
    ) -> KubeReader:
        """A reader from a kubeconfig file and optional context; a bad file is a `bad_config` error.

        The file is read and parsed on a worker thread (it is blocking I/O, and a credential plugin may
        take seconds); only the client itself is made on the event loop, which its session belongs to.
        `clock` times the re-reads of a `tokenFile`; `timer` each GET.
        """
        try:
            loop = asyncio.get_running_loop()
            load = functools.partial(_load_configuration, kubeconfig, context, clock)
            configuration = await loop.run_in_executor(_LOADER, load)
        except Exception as err:  # the loader raises ConfigException, OSError, yaml errors, ...
            raise ClusterError(name, "bad_config", f"cannot load kubeconfig {kubeconfig}: {err}") from None
        return cls(name, ApiClient(configuration=configuration), timer=timer)

    async def close(self) -> None:
        await self._api.close()  # type: ignore[no-untyped-call]

    async def get(self, path: ApiPath, *, timeout: float) -> RawResponse:
        """GET one path; any status is returned, transport failures raise `ClusterError`."""
        started = self._timer()
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
        return RawResponse(response.status, body, dict(response.headers), self._timer() - started)

    async def get_ok(self, path: ApiPath, *, timeout: float) -> RawResponse:
        """GET one path and raise `ClusterError` unless it answered 2xx."""
        response = await self.get(path, timeout=timeout)
        if 200 <= response.status < 300:
            return response
        kind = _STATUS_KINDS.get(response.status, "http")
        said = _status_message(response) if kind == "http" else ""
        raise ClusterError(
            self.name, kind, f"GET {path.path} answered {response.status}{said}{_hint(path, kind)}"
        )

    async def syncer_metrics(self, *, timeout: float) -> str:
        """The text of `/metrics/syncer` (the proxy's metrics)."""
        return (await self.get_ok(syncer_metrics_path(), timeout=timeout)).text


def _load_configuration(kubeconfig: Path, context: str | None, clock: Callable[[], float]) -> Configuration:
    """The client configuration of one kubeconfig context (runs on a worker thread, on its own loop)."""
    document = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))  # read once: it may be a pipe
    # Relative paths (certificates, tokenFile) resolve against the kubeconfig's directory, as kubectl's do.
    base = kubeconfig.absolute().parent
    loader = kube_config.KubeConfigLoader(  # type: ignore[no-untyped-call]
        config_dict=document, config_base_path=str(base), active_context=context
    )
    configuration = Configuration()
    asyncio.run(loader.load_and_set(configuration))  # type: ignore[no-untyped-call]
    # A token pasted with its newline (`token: |` in YAML, or `$(cat token)` kept raw) is sent as given by
    # the loader, and aiohttp then refuses the header with a ValueError on every request: trim it, as
    # kubectl trims a tokenFile.
    bearer = configuration.api_key.get("BearerToken")
    if isinstance(bearer, str) and bearer != bearer.strip():
        configuration.api_key["BearerToken"] = bearer.strip()
    token_file = _token_file(document, loader.current_context, base)
    if token_file is not None:
        token = CredentialFile(token_file, what=f"the tokenFile of {kubeconfig}", clock=clock)
        token.load()
        configuration.refresh_api_key_hook = _bearer_from(token)  # type: ignore[assignment]
    return configuration


def _token_file(document: Mapping[str, Any], context: Mapping[str, Any], base: Path) -> Path | None:
    """The chosen context's user's `tokenFile` (relative to `base`), when the loader authenticated with it."""
    name = context["context"].get("user")
    users = [u for u in document.get("users") or [] if u.get("name") == name]
    user = (users[0].get("user") or {}) if users else {}
    if "tokenFile" not in user or any(key in user for key in ("token", "exec", "auth-provider")):
        return None  # no tokenFile, or one of these wins over it in the loader
    return base / str(user["tokenFile"])


def _bearer_from(token: CredentialFile) -> Callable[[Configuration], Awaitable[None]]:
    """The client's `refresh_api_key_hook`: before each request, the token file's current token."""

    async def refresh(configuration: Configuration) -> None:
        configuration.api_key["BearerToken"] = f"Bearer {await token.current()}"

    return refresh


def _hint(path: ApiPath, kind: str) -> str:
    if path != syncer_metrics_path():
        return ""
    return {
        "not_found": ": this vCluster is older than v0.37 (the proxy metrics path does not exist yet)",
        "forbidden": ": the bot's identity lacks `get` on the non-resource URL /metrics/syncer",
        "unauthorized": ": the kubeconfig's credentials were rejected",
    }.get(kind, "")


def _status_message(response: RawResponse) -> str:
    """The API server's own words on a failure (its `Status` object's message), as ` (...)`; else ""."""
    try:
        doc = json.loads(response.body)
    except ValueError:
        return ""
    message = doc.get("message") if isinstance(doc, dict) and doc.get("kind") == "Status" else None
    if not isinstance(message, str) or not message.strip():
        return ""
    return f" ({_clip(message.strip(), 200)})"


def _describe(err: BaseException) -> str:
    if isinstance(err, aiohttp.ClientConnectorCertificateError):
        cause = err.certificate_error
        why = getattr(cause, "verify_message", None) or str(cause)
        return (
            f"the TLS certificate of {err.host}:{err.port} did not verify against the kubeconfig's "
            f"certificate authority ({why})"
        )
    return _clip(str(err) or type(err).__name__, 300)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
