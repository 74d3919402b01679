"""`proxybot check-vcluster FILE [--json]` through the console entry: exit 0 accepted (warnings print), 1
refused or not YAML, 2 unreadable; the JSON report; one terminal line per problem's YAML path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli.check_vcluster import MAX_BYTES
from bot.cli.main import main

ACCEPTED = """\
controlPlane:
  statefulSet:
    highAvailability: {replicas: 3}
experimental:
  proxy:
    customResources:
      widgets.example.com/v1:
        enabled: true
        targetVirtualCluster:
          name: crd-store
      gadgets.example.com/v1:
        enabled: true
        targetVirtualCluster:
          name: crd-store
"""

WARNED = """\
experimental:
  proxy:
    customResources:
      "*.example.com/v1":
        enabled: true
        targetVirtualCluster: {name: crd-store, project: central}
        accessResources: all
"""

REFUSED = """\
experimental:
  proxy:
    customResources:
      widgets/v1:
        enabled: true
        targetVirtualCluster: {name: crd-store}
      gadgets.example.com/v1:
        enabled: false
"""

WIDGETS = 'experimental.proxy.customResources["widgets/v1"]'
GADGETS_NAME = 'experimental.proxy.customResources["gadgets.example.com/v1"].targetVirtualCluster.name'


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["check-vcluster", *argv], env={})
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "vcluster.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def run_json(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, dict[str, Any]]:
    status, out, err = run(capsys, str(path), "--json")
    lines = out.strip().splitlines()
    assert len(lines) == 1, out  # exactly one JSON object on stdout
    assert err == ""
    report: dict[str, Any] = json.loads(lines[0])
    return status, report


def test_an_accepted_file_exits_0_and_names_what_the_proxy_serves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, ACCEPTED)
    status, out, err = run(capsys, str(path))
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"{path}: ok: vCluster's startup validation accepts the resource proxy configuration"
    assert "example.com/v1 -> crd-store (the client's project), accessResources owned:" in out
    assert "warning" not in out


def test_warnings_print_and_still_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, str(write(tmp_path, WARNED)))
    assert status == 0
    assert 'warning experimental.proxy.customResources["*.example.com/v1"]\n' in out
    assert 'warning experimental.proxy.customResources["*.example.com/v1"].accessResources\n' in out
    assert out.rstrip().endswith("0 refusals, 2 warnings")


def test_a_refused_file_exits_1_naming_each_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, REFUSED)
    status, out, err = run(capsys, str(path))
    assert (status, err) == (1, "")
    assert out.splitlines()[0] == f"{path}: refused: vCluster's startup validation refuses this configuration"
    assert f"refused {WIDGETS}\n" in out
    assert f"refused {GADGETS_NAME}\n" in out
    assert "    next: " in out
    assert out.rstrip().endswith("2 refusals, 0 warnings")


def test_json_carries_the_verdict_and_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, REFUSED)
    status, report = run_json(capsys, path)
    assert status == 1
    assert (report["file"], report["verdict"], report["passed"]) == (str(path), "refused", False)
    assert report["group_versions"] == []
    assert [(p["severity"], p["key"]) for p in report["problems"]] == [
        ("refused", WIDGETS),
        ("refused", GADGETS_NAME),
    ]
    assert all(set(p) == {"severity", "key", "message", "next"} for p in report["problems"])
    assert all(p["message"] and p["next"] for p in report["problems"])


def test_json_of_an_accepted_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, report = run_json(capsys, write(tmp_path, WARNED))
    assert status == 0
    assert (report["verdict"], report["proxy"]) == ("ok", "starts")
    assert report["group_versions"] == [
        {
            "group_version": "example.com/v1",
            "target": "crd-store",
            "project": "central",
            "access": "all",
            "keys": ["*.example.com/v1"],
        }
    ]
    assert {p["severity"] for p in report["problems"]} == {"warning"}


def test_without_a_proxy_section_it_says_vcluster_starts_without_the_proxy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "controlPlane:\n  distro: {k8s: {enabled: true}}\n")
    status, out, _ = run(capsys, str(path))
    assert status == 0
    assert out == (
        f"{path}: ok: no experimental.proxy.customResources entries: "
        "vCluster starts without the resource proxy\n"
    )
    assert run_json(capsys, path)[1]["proxy"] == "not_configured"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("experimental:\n  proxy: [\n", "not valid YAML: line 3, column 1: "),
        ("- experimental\n- proxy\n", "the top level must be a mapping"),
        (b"experimental: \xff\n", "not valid YAML: byte 14: not utf-8 text"),
    ],
)
def test_a_file_vcluster_cannot_read_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | bytes, message: str
) -> None:
    path = write(tmp_path, text)
    status, out, _ = run(capsys, str(path))
    assert status == 1
    assert f"refused (file)\n    {message}" in out
    status, report = run_json(capsys, path)
    assert (status, report["verdict"]) == (1, "refused")
    assert report["problems"][0]["key"] == "(file)"
    assert report["problems"][0]["message"].startswith(message)


def test_no_such_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.yaml"
    assert run(capsys, str(missing)) == (2, "", f"{missing}: no such file\n")
    status, out, err = run(capsys, str(missing), "--json")
    assert (status, err) == (2, "")
    assert json.loads(out) == {
        "check": "check-vcluster",
        "file": str(missing),
        "passed": False,
        "error": "no such file",
    }


def test_a_directory_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, str(tmp_path)) == (2, "", f"{tmp_path}: a directory, not a file\n")


def test_a_file_far_too_large_is_refused_unread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, b"#" * (MAX_BYTES + 1))
    status, out, err = run(capsys, str(path))
    assert (status, out) == (2, "")
    assert err == f"{path}: larger than 4 MiB: not a vcluster.yaml\n"


def test_file_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check-vcluster"], env={})
    assert exited.value.code == 2
    assert "FILE" in capsys.readouterr().err
