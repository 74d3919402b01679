"""vCluster versions (bot/domain/versions.py): image tags, the StatefulSet's container, the three flags."""

from __future__ import annotations

from typing import Any

import pytest

from bot.domain.findings import Severity
from bot.domain.versions import (
    Role,
    TenantVersion,
    from_statefulset,
    image_tag,
    newest,
    parse_version,
    version_findings,
)


@pytest.mark.parametrize(
    ("image", "tag"),
    [
        ("ghcr.io/loft-sh/vcluster-pro:0.37.2", "0.37.2"),
        ("registry.local:5000/loft-sh/vcluster-pro:v0.38.0-rc.1", "v0.38.0-rc.1"),
        ("ghcr.io/loft-sh/vcluster-pro:0.37.2@sha256:" + "a" * 64, "0.37.2"),
        ("registry.local:5000/vcluster-pro", None),
        ("vcluster-pro@sha256:" + "b" * 64, None),
    ],
)
def test_image_tag(image: str, tag: str | None) -> None:
    assert image_tag(image) == tag


@pytest.mark.parametrize(
    ("tag", "shown"),
    [("0.37.2", "0.37.2"), ("v0.38", "0.38.0"), ("0.38.0-rc.1", "0.38.0-rc.1"), ("latest", None), ("", None)],
)
def test_parse_version(tag: str, shown: str | None) -> None:
    found = parse_version(tag)
    assert (None if found is None else str(found)) == shown


def test_versions_order_numerically_and_a_pre_release_before_its_release() -> None:
    order = ["0.9.9", "0.36.4", "0.37.0-rc.1", "0.37.0", "0.37.10", "1.0.0"]
    parsed = [parse_version(v) for v in reversed(order)]
    assert [str(v) for v in sorted(p for p in parsed if p is not None)] == order


def statefulset(*containers: tuple[str, str]) -> dict[str, Any]:
    listed = [{"name": name, "image": image} for name, image in containers]
    return {"spec": {"template": {"spec": {"containers": listed}}}}


def test_the_syncer_container_is_read_not_a_sidecar() -> None:
    sts = statefulset(
        ("proxy", "envoyproxy/envoy:v1.30.0"), ("syncer", "ghcr.io/loft-sh/vcluster-pro:0.37.1")
    )
    found = from_statefulset("team-a", Role.CLIENT, sts)
    assert str(found.version) == "0.37.1"
    unnamed = statefulset(("log", "busybox:1.36"), ("main", "ghcr.io/loft-sh/vcluster:0.36.0"))
    assert str(from_statefulset("x", Role.CLIENT, unnamed).version) == "0.36.0"


def test_an_untagged_or_empty_statefulset_is_unknown_with_why() -> None:
    found = from_statefulset(
        "x", Role.TARGET, statefulset(("syncer", "ghcr.io/loft-sh/vcluster-pro@sha256:" + "c" * 64))
    )
    assert found.version is None
    assert found.shown().startswith("unknown (image ghcr.io/loft-sh/vcluster-pro@sha256:")
    empty = from_statefulset("x", Role.TARGET, {})
    assert empty.shown() == "unknown (the StatefulSet names no container image)"


def tenant(name: str, version: str, role: Role = Role.TARGET) -> TenantVersion:
    return TenantVersion(name, role, parse_version(version), f"vcluster-pro:{version}")


def test_a_current_pair_has_no_flags() -> None:
    client, target = tenant("team-a", "0.37.1", Role.CLIENT), tenant("p/store", "0.37.1")
    assert version_findings(client, [target], newest([client, target])) == []


def test_a_client_before_037_is_too_old_never_down() -> None:
    client, target = tenant("team-a", "0.36.4", Role.CLIENT), tenant("p/store", "0.37.1")
    found = {f.kind: f for f in version_findings(client, [target], newest([client, target]))}
    assert set(found) == {"client_too_old", "version_skew", "version_lagging"}
    assert found["client_too_old"].severity is Severity.WARNING
    assert "too old" in found["client_too_old"].title
    assert "down" not in found["client_too_old"].title
    assert found["version_skew"].title == (
        "client team-a (0.36.4) and target p/store (0.37.1) are on different minor versions"
    )
    assert found["version_lagging"].severity is Severity.INFO
    assert found["version_lagging"].target == "team-a"


def test_an_old_target_is_not_too_old_but_lags() -> None:
    client, target = tenant("team-a", "0.37.2", Role.CLIENT), tenant("p/store", "0.37.0")
    found = version_findings(client, [target], parse_version("0.38.1"))
    assert [(f.kind, f.target) for f in found] == [
        ("version_lagging", "team-a"),
        ("version_lagging", "p/store"),
    ]
    assert "behind the newest seen (0.38.1)" in found[1].title


def test_unknown_versions_raise_no_flag() -> None:
    client = TenantVersion("team-a", Role.CLIENT, unavailable="forbidden")
    assert version_findings(client, [tenant("p/store", "0.36.0")], None) == []
    assert newest([client]) is None


def test_version_words_say_the_platform_carries_the_risk_too() -> None:
    """The operations guide (vcluster/manage/resource-proxy-operations.mdx, its opening: keep the client, the
    target and the platform current): staleness fixes span vCluster and the platform's stale peer cleanup,
    and a new client against an old platform keeps the risk; it says nothing of a client-target skew."""
    client, target = tenant("team-a", "0.36.4", Role.CLIENT), tenant("p/store", "0.37.1")
    found = {f.kind: f for f in version_findings(client, [target], newest([client, target]))}
    for kind in ("version_skew", "version_lagging"):
        assert "new client against an old platform" in found[kind].cause
        assert "does not read its version" in found[kind].cause
        assert "platform" in found[kind].next_step
    assert "a client and a target apart keep the degradation risk" not in found["version_skew"].cause
