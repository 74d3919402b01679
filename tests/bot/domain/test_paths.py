"""No argument can reach an API path other than the probe path it names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.paths import ApiPath, control_plane_pods_path, discovery_path, pod_log_path, probe_path
from bot.errors import InputError


def test_probe_path_is_the_guides() -> None:
    assert probe_path("example.com/v1", "default", "myresources") == ApiPath(
        "/apis/example.com/v1/namespaces/default/myresources", (("limit", "1"),)
    )


@pytest.mark.parametrize(
    ("gv", "namespace", "resource", "field"),
    [
        ("example.com/v1", "..", "myresources", "namespace"),
        ("example.com/v1", "default", "../../api/v1/secrets", "resource"),
        ("example.com/v1", "%2e%2e", "myresources", "namespace"),
        ("example.com/v1", "default", "secrets?watch=true", "resource"),
        ("example.com/v1", "default", "x#frag", "resource"),
        ("../api/v1", "default", "myresources", "group_version"),
        ("example.com/v1/namespaces/kube-system/secrets", "default", "x", "group_version"),
        ("example.com/v1", "Default", "myresources", "namespace"),
        ("example.com/v1", "default", "", "resource"),
        ("v1", "default", "pods", "group_version"),
        ("example.com/v1", "default\n", "myresources", "namespace"),
    ],
)
def test_hostile_parts_are_refused(gv: str, namespace: str, resource: str, field: str) -> None:
    with pytest.raises(InputError, match=rf"^{field}: "):
        probe_path(gv, namespace, resource)


@given(st.text(max_size=40), st.text(max_size=40), st.text(max_size=40))
def test_any_accepted_path_has_the_probe_shape(gv: str, namespace: str, resource: str) -> None:
    try:
        path = probe_path(gv, namespace, resource)
    except InputError:
        return
    parts = path.path.split("/")
    assert (parts[0], parts[1], parts[4], len(parts)) == ("", "apis", "namespaces", 7)
    assert not any(bad in path.path for bad in ("..", "%", "?", "#", "\\", " "))


def test_discovery_path_validates() -> None:
    assert discovery_path("example.com/v1").path == "/apis/example.com/v1"
    with pytest.raises(InputError):
        discovery_path("example.com/v1/../../api")


def test_pod_paths_read_one_namespace_and_one_pod_log() -> None:
    assert control_plane_pods_path("vcluster-team-a") == ApiPath(
        "/api/v1/namespaces/vcluster-team-a/pods", (("labelSelector", "app=vcluster"),)
    )
    log = pod_log_path("vcluster-team-a", "team-a-0", "syncer", tail_lines=100)
    assert log.path == "/api/v1/namespaces/vcluster-team-a/pods/team-a-0/log"
    assert log.query == (("container", "syncer"), ("timestamps", "true"), ("tailLines", "100"))
    since = pod_log_path("ns", "p-1", None, tail_lines=5000, since_seconds=600, limit_bytes=1024)
    assert dict(since.query) == {
        "timestamps": "true",
        "tailLines": "5000",
        "sinceSeconds": "600",
        "limitBytes": "1024",
    }


@pytest.mark.parametrize(
    ("namespace", "pod", "container", "field"),
    [
        ("..", "team-a-0", None, "namespace"),
        ("ns/../../secrets", "team-a-0", None, "namespace"),
        ("ns", "../secrets", None, "pod"),
        ("ns", "team-a-0/exec", None, "pod"),
        ("ns", "team-a-0?follow=true", None, "pod"),
        ("ns", "team-a-0", "syncer&previous=true", "container"),
    ],
)
def test_hostile_pod_path_parts_are_refused(
    namespace: str, pod: str, container: str | None, field: str
) -> None:
    with pytest.raises(InputError, match=rf"^{field}: "):
        pod_log_path(namespace, pod, container, tail_lines=1)
