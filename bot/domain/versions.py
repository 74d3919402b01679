"""vCluster versions of clients and targets, read from their control-plane StatefulSet's image, and judged.

The guide's first operational rule: keep client, target and platform current, because peer staleness fixes
span vCluster and the platform's stale peer cleanup (a new client against an old platform keeps the
degradation risk). Three flags follow from it: a client older than v0.37 has no `/metrics/syncer` (its
proxy state cannot be read: "too old", never "down"); a client and a target on different minor versions
(one of them is not current); and any tenant behind the newest version seen in the fleet (in this check's
reads). The platform's own version is not read: the words say so where it matters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.domain.findings import Finding, Severity, finding_key
from bot.domain.guide import KEEP_VERSIONS_CURRENT

# The guide's reason for the rule, said wherever a version is flagged; the bot reads no platform version.
PLATFORM_TOO = (
    "Peer staleness fixes span vCluster and the platform's stale peer cleanup: a new client against an old "
    "platform keeps the degradation risk, so the platform must be current too (this check does not read "
    "its version)."
)
# The first vCluster with `/metrics/syncer` (the proxy metrics).
METRICS_SINCE = (0, 37)
_TAG = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?$")


@dataclass(frozen=True, slots=True, order=True)
class VClusterVersion:
    """A vCluster release `major.minor.patch`, a pre-release ordered before its release."""

    major: int
    minor: int
    patch: int
    released: bool  # False for `-rc.1`, `-beta.2`, ...: sorts before the release of the same numbers
    text: str

    @property
    def minor_line(self) -> tuple[int, int]:
        return (self.major, self.minor)

    def __str__(self) -> str:
        return self.text


def parse_version(tag: str) -> VClusterVersion | None:
    """`0.37.2`, `v0.37.2`, `0.38.0-rc.1` -> a version; anything else (`latest`, a digest) -> None."""
    found = _TAG.match(tag.strip())
    if found is None:
        return None
    major, minor, patch, pre = found.groups()
    text = f"{major}.{minor}.{patch or 0}" + (f"-{pre}" if pre else "")
    return VClusterVersion(int(major), int(minor), int(patch or 0), pre is None, text)


def image_tag(image: str) -> str | None:
    """The tag of an image reference (`registry:5000/loft-sh/vcluster-pro:0.37.2@sha256:...` -> `0.37.2`)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def syncer_image(statefulset: Mapping[str, Any]) -> str | None:
    """The vCluster container's image of a control-plane StatefulSet: `syncer`, else one named vcluster."""
    spec = ((statefulset.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    images = [(str(c.get("name", "")), str(c.get("image", ""))) for c in containers if c.get("image")]
    for wanted in (lambda n, i: n == "syncer", lambda n, i: "vcluster" in i.rsplit("/", 1)[-1]):
        found = [image for name, image in images if wanted(name, image)]
        if found:
            return found[0]
    return images[0][1] if images else None


class Role(StrEnum):
    CLIENT = "client"
    TARGET = "target"


@dataclass(frozen=True, slots=True)
class TenantVersion:
    """One tenant's vCluster version as read (or why it is not known)."""

    name: str  # the client cluster's name, or the target's `<project>/<name>`
    role: Role
    version: VClusterVersion | None = None
    image: str | None = None
    unavailable: str | None = None

    def shown(self) -> str:
        if self.version is not None:
            return str(self.version)
        if self.image is not None:
            return f"unknown (image {self.image})"
        return f"unknown ({self.unavailable or 'not read'})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role.value,
            "version": None if self.version is None else str(self.version),
            "image": self.image,
            "unavailable": self.unavailable,
        }


def from_statefulset(name: str, role: Role, statefulset: Mapping[str, Any]) -> TenantVersion:
    """The version a control-plane StatefulSet runs, from its vCluster container's image tag."""
    image = syncer_image(statefulset)
    if image is None:
        return TenantVersion(name, role, unavailable="the StatefulSet names no container image")
    tag = image_tag(image)
    return TenantVersion(name, role, None if tag is None else parse_version(tag), image)


def newest(versions: Iterable[TenantVersion]) -> VClusterVersion | None:
    """The newest version among those read (None when none is known)."""
    known = [v.version for v in versions if v.version is not None]
    return max(known, default=None)


def too_old(version: TenantVersion) -> bool:
    """A client without proxy metrics: older than v0.37."""
    v = version.version
    return version.role is Role.CLIENT and v is not None and v.minor_line < METRICS_SINCE


def version_findings(
    client: TenantVersion, targets: Sequence[TenantVersion], fleet_newest: VClusterVersion | None
) -> list[Finding]:
    """The flags for one client and its targets: too old, minor versions apart, behind the fleet's newest."""
    found: list[Finding] = []
    if too_old(client):
        found.append(_too_old(client))
    for target in targets:
        if client.version and target.version and client.version.minor_line != target.version.minor_line:
            found.append(_skew(client, target))
    for tenant in (client, *targets):
        if fleet_newest is not None and tenant.version is not None and tenant.version < fleet_newest:
            found.append(_lagging(tenant, fleet_newest))
    return found


def _finding(
    severity: Severity, kind: str, subject: str, title: str, evidence: Sequence[str], cause: str, step: str
) -> Finding:
    return Finding(
        severity=severity,
        kind=kind,
        key=finding_key(kind, subject),
        title=title,
        evidence=tuple(evidence),
        cause=cause,
        next_step=step,
        guide_section=KEEP_VERSIONS_CURRENT,
        target=subject,
    )


def _too_old(client: TenantVersion) -> Finding:
    return _finding(
        Severity.WARNING,
        "client_too_old",
        client.name,
        f"client {client.name} runs vCluster {client.version}: too old for proxy metrics",
        [f"image {client.image}", "/metrics/syncer exists from vCluster v0.37"],
        "Before v0.37 the proxy publishes no metrics: its state cannot be read, which is not the same as "
        "down.",
        "Upgrade the client tenant cluster to v0.37 or later (and keep the target and platform current).",
    )


def _skew(client: TenantVersion, target: TenantVersion) -> Finding:
    return _finding(
        Severity.WARNING,
        "version_skew",
        target.name,
        f"client {client.name} ({client.version}) and target {target.name} ({target.version}) are on "
        "different minor versions",
        [f"client image {client.image}", f"target image {target.image}"],
        "One of the two is not on a current vCluster, which the guide asks of every client and target. "
        + PLATFORM_TOO,
        "Upgrade the older of the two, and check that the platform runs a current release as well.",
    )


def _lagging(tenant: TenantVersion, fleet_newest: VClusterVersion) -> Finding:
    return _finding(
        Severity.INFO,
        "version_lagging",
        tenant.name,
        f"{tenant.role.value} {tenant.name} runs vCluster {tenant.version}, behind the newest seen "
        f"({fleet_newest})",
        [f"image {tenant.image}"],
        "The guide's first rule is to keep every client, target and the platform current. " + PLATFORM_TOO,
        f"Plan the upgrade of {tenant.name} to {fleet_newest}, and keep the platform current with it.",
    )
