"""The vCluster Platform's management API, read with one access key: who the key is, and the instances.

`POST /kubernetes/management/apis/management.loft.sh/v1/selves` answers the key's user, its scope and the
project namespace prefix; `GET .../virtualclusterinstances` lists the instances of every project the key
may see, `GET .../namespaces/<p-project>/virtualclusterinstances` one project's (docs/platform-api.md).
Every call has a timeout; the key is read from its file (again each minute, and at once when the platform
refuses the one in hand: it may have been rotated) and sent as a bearer
token, never logged. A refusal or failure is a `PlatformError` naming `platform.url`, the status and, in the
bot's words, what it means.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bot.clients.credentials import CredentialFile
from bot.errors import PlatformError
from config import names

MANAGEMENT = "/kubernetes/management/apis/management.loft.sh/v1"
PLURAL = "virtualclusterinstances"
# A fleet's list is bounded: a platform of thousands of instances answers in a few megabytes.
MAX_BODY = 64 * 1024 * 1024

_MEANING = {
    401: "the access key is not valid (expired, deleted, or rotated): make a new key and mount it",
    403: "the access key may not do this: widen its scope or its user's role (see config/deploy/README.md)",
    404: "not found: check that platform.url is the platform's address",
}


@dataclass(frozen=True, slots=True)
class KeyScope:
    """What the platform says of the key: the project namespace prefix, and the projects it is scoped to."""

    prefix: str
    projects: tuple[str, ...]  # empty: not scoped to projects


class PlatformClient:
    """GET/POST on the management API with the access key; one `httpx.AsyncClient`, closed by `aclose`."""

    def __init__(self, url: str, key: Path, *, ca_file: Path | None, timeout: float) -> None:
        self.url = url.rstrip("/")
        self._key = CredentialFile(key, what="platform access key")
        self._http = httpx.AsyncClient(
            base_url=self.url,
            verify=_trust(self.url, ca_file),
            timeout=timeout,
            follow_redirects=False,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def scope(self) -> KeyScope:
        body = await self._call(
            "POST", f"{MANAGEMENT}/selves", {"apiVersion": "management.loft.sh/v1", "kind": "Self"}
        )
        status = body.get("status") if isinstance(body.get("status"), Mapping) else {}
        assert isinstance(status, Mapping)
        prefix = status.get("projectNamespacePrefix")
        scoped = status.get("accessKeyScope")
        projects: list[str] = []
        if isinstance(scoped, Mapping) and isinstance(scoped.get("projects"), list):
            projects = [str(p.get("project")) for p in scoped["projects"] if isinstance(p, Mapping)]
        return KeyScope(prefix if isinstance(prefix, str) and prefix else "p-", tuple(projects))

    async def instances(self, namespaces: Sequence[str]) -> dict[str, Any]:
        """One list document of the instances: across every project (no namespaces), else of each."""
        if not namespaces:
            return await self._call("GET", f"{MANAGEMENT}/{PLURAL}")
        items: list[Any] = []
        for namespace in namespaces:
            try:  # a project the settings or the platform's `Self` name: checked before it is a path
                names.dns1123_label(namespace)
            except ValueError as exc:
                raise PlatformError(self.url, None, f"project namespace {exc}") from None
            listed = await self._call("GET", f"{MANAGEMENT}/namespaces/{namespace}/{PLURAL}")
            found = listed.get("items")
            if not isinstance(found, list):
                raise PlatformError(self.url, 200, f"the list of {namespace} has no items")
            items += found
        return {"kind": "VirtualClusterInstanceList", "items": items}

    async def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        try:
            key = await self._key.current()
        except ValueError as exc:
            raise PlatformError(self.url, None, str(exc)) from None
        answer = await self._send(method, path, key, body)
        if answer.status_code == 401:  # the key may have been rotated in its file since it was read
            try:
                fresh = await asyncio.to_thread(self._key.load)
            except ValueError as exc:
                raise PlatformError(self.url, None, str(exc)) from None
            if fresh != key:
                answer = await self._send(method, path, fresh, body)
        if answer.status_code >= 400:
            raise PlatformError(self.url, answer.status_code, _refusal(answer))
        if len(answer.content) > MAX_BODY:
            raise PlatformError(self.url, answer.status_code, f"its answer is larger than {MAX_BODY} bytes")
        try:
            document = answer.json()
        except ValueError:
            raise PlatformError(self.url, answer.status_code, "its answer is not JSON") from None
        if not isinstance(document, dict):
            raise PlatformError(self.url, answer.status_code, "its answer is not a JSON object")
        return document

    async def _send(self, method: str, path: str, key: str, body: Mapping[str, Any] | None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
        try:
            return await self._http.request(method, path, headers=headers, json=body)
        except httpx.TimeoutException:
            raise PlatformError(self.url, None, "no answer within platform.timeout") from None
        except httpx.HTTPError as exc:
            raise PlatformError(self.url, None, f"cannot reach it ({type(exc).__name__})") from None


def _trust(url: str, ca_file: Path | None) -> ssl.SSLContext | bool:
    """The platform's CA as an SSL context (httpx deprecates a path for `verify`); a CA that does not load is
    a `PlatformError` naming it."""
    if ca_file is None:
        return True
    try:
        return ssl.create_default_context(cafile=str(ca_file))
    except ssl.SSLError:
        raise PlatformError(url, None, f"platform.ca_file {ca_file} is not a PEM CA bundle") from None
    except OSError as err:
        raise PlatformError(url, None, f"platform.ca_file {ca_file}: {err.strerror or err}") from None


def _refusal(answer: httpx.Response) -> str:
    """`401 Unauthorized: <what it means>` from a Kubernetes `Status` (its message clipped) or the status."""
    said = ""
    try:
        document = answer.json()
    except ValueError:
        document = None
    if isinstance(document, Mapping) and isinstance(document.get("message"), str):
        said = f" ({document['message'][:200]})"
    meaning = _MEANING.get(answer.status_code, "the platform failed; the last fleet read is kept")
    return f"{answer.status_code} {answer.reason_phrase}{said}: {meaning}"
