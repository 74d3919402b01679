"""The target's refusals through the simulated proxy, as real kubectl meets them on the client: 401 auth
failed, 403 from the target's RBAC, 404 from a refused ownership GET, 409 on a colliding create."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.sim_scenarios import started

KUBECTL = "/usr/bin/kubectl"
WIDGET = """\
apiVersion: example.com/v1
kind: Widget
metadata:
  name: {name}
  namespace: default
"""


def kubectl(config: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    kubeconfig = config.parent / f"{config.stem}.kubeconfigs" / "team-a.yaml"
    cmd = [KUBECTL, "--kubeconfig", str(kubeconfig), "--context", "team-a", "-n", "default", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def auth_failed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    for _, config in started(tmp_path_factory, "auth-failed"):
        yield config


@pytest.fixture(scope="module")
def get_denied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    for _, config in started(tmp_path_factory, "ownership-get-denied"):
        yield config


@pytest.fixture(scope="module")
def collision(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    for _, config in started(tmp_path_factory, "name-collision"):
        yield config


def test_auth_failed_answers_every_proxied_request_401(auth_failed: Path) -> None:
    out = kubectl(auth_failed, "get", "widgets")
    assert out.returncode == 1
    assert "auth failed" in out.stderr


def test_target_rbac_without_list_answers_403_naming_the_client_identity(get_denied: Path) -> None:
    out = kubectl(get_denied, "get", "widgets")
    assert out.returncode == 1
    assert 'User "loft:vcluster:p-platform:team-a" cannot list resource "widgets"' in out.stderr


def test_a_refused_ownership_get_is_masked_as_404_on_a_named_delete(get_denied: Path) -> None:
    out = kubectl(get_denied, "delete", "widget", "widget-0")  # owned by team-a, yet 404
    assert out.returncode == 1
    assert "NotFound" in out.stderr
    assert 'widgets "widget-0" not found' in out.stderr


def test_creating_a_name_the_target_holds_answers_409_though_lists_hide_it(collision: Path) -> None:
    listed = kubectl(collision, "get", "widgets", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert "widget.example.com/widget-1" not in listed.stdout  # not team-a's: owned hides it
    out = kubectl(collision, "create", "--validate=false", "-f", "-", stdin=WIDGET.format(name="widget-1"))
    assert out.returncode == 1
    assert 'widgets.example.com "widget-1" already exists' in out.stderr


def test_creating_a_free_name_is_not_a_conflict(collision: Path) -> None:
    out = kubectl(collision, "create", "--validate=false", "-f", "-", stdin=WIDGET.format(name="fresh"))
    assert "already exists" not in out.stderr
    assert "read-only" in out.stderr  # the simulator's targets store nothing new
