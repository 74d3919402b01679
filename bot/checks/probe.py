"""The guide's synthetic probe: what is asked, built only from validated parts (what came back:
`bot.domain.probe_result`).

The request is `GET /apis/<gv>/namespaces/<ns>/<resource>?limit=1`, and the group/version must be one the
target's config proxies, so no argument can reach another API path. Running it: `bot.checks.probe_run`.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.paths import ApiPath, probe_path
from bot.errors import InputError
from bot.reads.context import TargetRef, resolve_target
from config.settings import Settings

PROBE_TIMEOUT = 15.0  # the guide's probe: --request-timeout=15s
MAX_REPEAT = 10


@dataclass(frozen=True, slots=True)
class ProbeRequest:
    """A validated probe: which target, through which client cluster, on which path."""

    ref: TargetRef
    group_version: str
    resource: str
    namespace: str

    @property
    def target(self) -> str:
        return self.ref.name

    @property
    def cluster(self) -> str:
        return self.ref.cluster.name

    @property
    def path(self) -> ApiPath:
        return probe_path(self.group_version, self.namespace, self.resource)

    @property
    def url(self) -> str:
        query = "&".join(f"{k}={v}" for k, v in self.path.query)
        return f"{self.path.path}?{query}"


def probe_request(
    settings: Settings,
    target: str,
    *,
    group_version: str | None = None,
    resource: str | None = None,
    namespace: str | None = None,
) -> ProbeRequest:
    """The probe for a configured target; overrides must be valid names and the gv one the target proxies."""
    ref = resolve_target(settings, target)
    probe = ref.target.probe
    request = ProbeRequest(
        ref,
        probe.group_version if group_version is None else group_version,
        probe.resource if resource is None else resource,
        probe.namespace if namespace is None else namespace,
    )
    probe_path(request.group_version, request.namespace, request.resource)  # checks every part now
    if request.group_version not in ref.target.group_versions:
        allowed = ", ".join(ref.target.group_versions)
        raise InputError(
            f"--gv: {request.group_version!r} is not proxied to {ref.name} (configured: {allowed})"
        )
    return request


def check_repeat(value: int) -> int:
    if not 1 <= value <= MAX_REPEAT:
        raise InputError(f"--repeat: {value} is outside 1..{MAX_REPEAT}")
    return value
