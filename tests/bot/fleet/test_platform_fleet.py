"""The fleet discovered through the simulator's platform stand-in, checked against real /usr/bin/kubectl:
every client and target found with no `clusters:`; `proxybot fleet`'s exits; `status`/`probe`/`path`/`logs`
for a discovered target read through the platform's paths and answer as with the hand-written config the
same simulator writes without the platform; a refused key; a project-scoped key."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli.console import Console
from bot.cli.main import build_parser
from bot.errors import PlatformError
from bot.fleet.derive import Fleet, Origin
from bot.fleet.reading import FleetReader, read_once
from config.loader import load_config
from sim.defaults import CLIENT, CONTROL_PLANE, PROJECT, TARGET
from sim.platform_instances import REFUSED_CLIENT
from sim.scenarios import LATE_JOINER
from sim.server import SimServer
from tests.fakes.sim_scenarios import AT, RecordingSimServer

KUBECTL = "/usr/bin/kubectl"
DISCOVERED = f"{PROJECT}/{TARGET}"  # platform/crd-store
CLIENTS = 2  # team-a -> platform/crd-store, team-b -> platform/crd-store-b
THROUGH_CLIENT = f"/kubernetes/project/{PROJECT}/virtualcluster/{CLIENT}/"
THROUGH_TARGET = f"/kubernetes/project/{PROJECT}/virtualcluster/{TARGET}/"
THROUGH_CONTROL_PLANE = f"/kubernetes/cluster/{CONTROL_PLANE}/"


class Sims:
    """Simulators started on first use and kept for the module: `(scenario, platform)` -> (server, config)."""

    def __init__(self, stack: ExitStack, tmp: pytest.TempPathFactory) -> None:
        self._stack, self._tmp = stack, tmp
        self._started: dict[tuple[str, bool, float | None], tuple[RecordingSimServer, Path]] = {}

    def __call__(
        self, scenario: str, *, platform: bool, at: float | None = None
    ) -> tuple[RecordingSimServer, Path]:
        key = (scenario, platform, at)
        if key not in self._started:
            speed, fault_at = AT.get(scenario, (20, 0.0))
            server = RecordingSimServer(scenario=scenario, speed=speed, clients=CLIENTS, platform=platform)
            self._stack.enter_context(server)
            with server.lock:
                server.world.advance_to(fault_at if at is None else at)
            config = server.write_config(self._tmp.mktemp(scenario) / "proxybot.yaml")
            self._started[key] = (server, config)
        return self._started[key]


@pytest.fixture(scope="module")
def sims(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sims]:
    with ExitStack() as stack:
        yield Sims(stack, tmp_path_factory)


@pytest.fixture(scope="module")
def healthy(sims: Sims) -> tuple[RecordingSimServer, Path]:
    return sims("healthy", platform=True)


def key_of(server: SimServer) -> str:
    assert server.platform is not None
    return server.platform.access_key


def clean_env() -> dict[str, str]:
    """This environment without proxybot's variables (a key set here would be a second key)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PROXYBOT_")}


def proxybot(config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`proxybot ARGV --config CONFIG` as a process of its own."""
    cmd = [sys.executable, "-m", "bot", *argv, "--config", str(config)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False, env=clean_env())


def run(config: Path, *argv: str) -> tuple[int, dict[str, Any], str]:
    """`proxybot ARGV --config CONFIG --json` in this process: its exit status, report, and all it showed."""
    out, err = io.StringIO(), io.StringIO()
    words = [*argv, "--config", str(config), "--json"]
    args = build_parser(argv=words).parse_args(words)
    code: int = args.run(args, Console({}, out, err))
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1, (out.getvalue(), err.getvalue())
    report: dict[str, Any] = json.loads(lines[0])
    return code, report, out.getvalue() + err.getvalue()


def kubectl_instances(config: Path) -> list[dict[str, Any]]:
    """The instances as the vendor's own example lists them, with the kubeconfig the simulator wrote."""
    kubeconfig = config.parent / f"{config.stem}.kubeconfigs" / "platform.yaml"
    cmd = [KUBECTL, "--kubeconfig", str(kubeconfig), "--context", "management"]
    cmd += ["get", "virtualclusterinstances", "-A", "-o", "json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False, env=clean_env())
    assert out.returncode == 0, out.stderr
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return items


def expected_fleet(items: list[dict[str, Any]]) -> tuple[dict[str, set[str]], set[str]]:
    """What the instances kubectl lists say, read independently of bot/fleet: each sound client's targets
    (`<project>/<name>` of its enabled entries), and the clients with an entry naming no target."""
    clients: dict[str, set[str]] = {}
    refused: set[str] = set()
    for item in items:
        meta = item["metadata"]
        project = meta["namespace"].removeprefix("p-")
        release = (item.get("status") or {}).get("virtualCluster") or item["spec"].get("template")
        values = yaml.safe_load(release["helmRelease"]["values"]) or {}
        entries = ((values.get("experimental") or {}).get("proxy") or {}).get("customResources") or {}
        enabled = [e for e in entries.values() if e.get("enabled")]
        if not enabled:
            continue
        if any("name" not in e["targetVirtualCluster"] for e in entries.values()):
            refused.add(meta["name"])
            continue
        clients[meta["name"]] = {
            f"{e['targetVirtualCluster'].get('project', project)}/{e['targetVirtualCluster']['name']}"
            for e in enabled
        }
    return clients, refused


def discovered(config: Path) -> Fleet:
    settings = load_config(config, env={}).settings
    assert settings.platform is not None
    assert settings.clusters == ()  # nothing listed by hand
    fleet = read_once(settings)[1]
    assert fleet is not None
    return fleet


def found(fleet: Fleet) -> tuple[dict[str, set[str]], set[str]]:
    clients = {c.name: {t.name for t in c.settings.targets} for c in fleet.clients if c.settings}
    return clients, {c.name for c in fleet.clients if c.settings is None}


@pytest.mark.parametrize(("scenario", "at"), [("healthy", None), ("fleet-grows", 60.0)])
def test_every_client_and_target_is_found_with_no_clusters(
    sims: Sims, scenario: str, at: float | None
) -> None:
    server, config = sims(scenario, platform=True, at=at)
    assert "clusters" not in yaml.safe_load(config.read_text())
    items = kubectl_instances(config)
    expected = expected_fleet(items)
    fleet = discovered(config)
    assert found(fleet) == expected
    assert fleet.instances == len(items)
    # ... which is the simulated fleet: every client, every target it proxies to, and the refused one.
    world = server.world.platform
    assert expected[0] == {
        c.name: {link.target.target_label for link in c.links} for c in world.clients.values()
    }
    assert expected[1] == {REFUSED_CLIENT}
    assert {t for targets in expected[0].values() for t in targets} == {
        t.target_label for t in world.targets.values()
    }
    if scenario == "fleet-grows":
        assert f"{PROJECT}/{LATE_JOINER}" in expected[0][CLIENT]
    assert all(c.origin is Origin.PLATFORM for c in fleet.clients)
    assert not fleet.problems


def test_each_discovered_client_is_read_through_the_platforms_paths(
    healthy: tuple[RecordingSimServer, Path],
) -> None:
    _, config = healthy
    team_a = next(c for c in discovered(config).clients if c.name == CLIENT)
    assert team_a.settings is not None
    assert (team_a.row.project, team_a.row.control_plane) == (PROJECT, f"{CONTROL_PLANE}/vcluster-{CLIENT}")
    assert team_a.settings.match == {"namespace": f"vcluster-{CLIENT}"}
    (crd_store,) = team_a.settings.targets
    assert crd_store.name == DISCOVERED
    assert crd_store.group_versions == ("example.com/v1", "data.example.com/v1alpha1")
    assert (crd_store.probe.group_version, crd_store.probe.resource, crd_store.probe.namespace) == (
        "example.com/v1",
        "widgets",
        "default",
    )
    kubeconfig = yaml.safe_load(team_a.settings.kubeconfig.read_text())
    servers = {c["name"]: c["cluster"]["server"] for c in kubeconfig["clusters"]}
    url = load_config(config, env={}).settings.platform.url  # type: ignore[union-attr]
    assert servers[team_a.settings.context or ""] == url + THROUGH_CLIENT.rstrip("/")
    assert servers[f"cluster/{CONTROL_PLANE}"] == url + THROUGH_CONTROL_PLANE.rstrip("/")
    assert key_of(healthy[0]) not in team_a.settings.kubeconfig.read_text()  # a token file, not the key


def test_proxybot_fleet_json_exits_1_naming_the_refused_client(
    healthy: tuple[RecordingSimServer, Path],
) -> None:
    server, config = healthy
    out = proxybot(config, "fleet", "--json")
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    assert (report["check"], report["passed"], report["verdict"]) == ("fleet", False, "problems")
    assert report["error"] is None
    rows = {r["name"]: r for r in report["rows"]}
    assert set(rows) == {CLIENT, "team-b", REFUSED_CLIENT}
    assert all(r["origin"] == "platform" and r["project"] == PROJECT for r in rows.values())
    assert rows[CLIENT]["targets"] == [
        {"name": DISCOVERED, "group_versions": ["example.com/v1", "data.example.com/v1alpha1"]}
    ]
    assert rows[CLIENT]["problems"] == []
    refused = rows[REFUSED_CLIENT]
    assert refused["targets"] == []
    assert any("targetVirtualCluster.name" in p for p in refused["problems"]), refused
    assert key_of(server) not in out.stdout + out.stderr


COMMANDS: dict[str, tuple[str, ...]] = {
    "status": ("status", DISCOVERED),
    "probe": ("probe", DISCOVERED),
    "path": ("path", DISCOVERED),
    "logs": ("logs", DISCOVERED),
}


def _verdicts(check: str, report: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on how the clusters are reached: the verdicts and their grounds."""
    shown: dict[str, Any] = {k: report[k] for k in ("check", "passed", "verdict")}
    if check == "status":
        shown["targets"] = [
            (t["target"], t["cluster"], t["verdict"], t["severity"], [f["kind"] for f in t["findings"]])
            for t in report["targets"]
        ]
    elif check == "probe":
        shown["statuses"] = [a["status"] for a in report["attempts"]]
        shown["cluster"] = report["cluster"]
    elif check == "path":
        shown["netpol"] = report["netpol"]["permits"]
        shown["dial_direct"] = report["dial_direct"]
        shown["answered"] = (report["client"]["answered"], report["direct"]["answered"])
    elif check == "logs":
        shown["matches"] = sorted((m["pod"], m["key"], m["severity"]) for m in report["matches"])
        shown["namespace"] = report["namespace"]
    return shown


# Where each check's reads go: the client's virtual cluster, and for some the target's or the control plane's.
REACHES = {
    "status": (THROUGH_CLIENT,),
    "probe": (THROUGH_CLIENT,),
    "path": (THROUGH_CLIENT, THROUGH_TARGET, THROUGH_CONTROL_PLANE),
    "logs": (THROUGH_CONTROL_PLANE,),
}


@pytest.mark.parametrize(
    ("scenario", "check"),
    [("healthy", check) for check in COMMANDS] + [("target-down", "status"), ("target-down", "probe")],
)
def test_a_discovered_target_answers_through_the_platform_as_with_a_hand_written_config(
    sims: Sims, scenario: str, check: str
) -> None:
    server, config = sims(scenario, platform=True)
    _, plain_config = sims(scenario, platform=False)
    assert "clusters" in yaml.safe_load(plain_config.read_text())
    before = len(server.requests)
    code, report, shown = run(config, *COMMANDS[check])
    paths = [path for _, path, _ in server.requests[before:]]
    plain_code, plain_report, _ = run(plain_config, *COMMANDS[check])
    assert (code, _verdicts(check, report)) == (plain_code, _verdicts(check, plain_report))
    # Every read went through the platform: its management API and its proxy paths, never a cluster's own.
    assert paths
    assert all(p.startswith("/kubernetes/") for p in paths), sorted(set(paths))
    for prefix in REACHES[check]:
        assert any(p.startswith(prefix) for p in paths), (prefix, sorted(set(paths)))
    assert key_of(server) not in shown


def test_target_down_is_a_failure_through_the_platform(sims: Sims) -> None:
    """The comparison above is not of two passes: the fault shows through the platform's paths."""
    _, config = sims("target-down", platform=True)
    code, report, _ = run(config, "probe", DISCOVERED)
    assert (code, report["passed"], report["verdict"]) == (1, False, "unavailable")


def with_key(config: Path, directory: Path, key: str, **platform: Any) -> Path:
    """The written platform config, with another key in its key file (and other `platform:` fields)."""
    document = yaml.safe_load(config.read_text())
    section = document["platform"]
    section["ca_file"] = str(config.parent / section["ca_file"])
    section["access_key_file"] = "other.access-key"
    section.update(platform)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "other.access-key").write_text(key + "\n")
    (directory / "other.access-key").chmod(0o600)
    path = directory / "proxybot.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_a_refused_key_exits_2_naming_the_platform_and_401_never_the_key(tmp_path: Path) -> None:
    with RecordingSimServer(scenario="healthy", speed=20, platform=True) as server:
        config = server.write_config(tmp_path / "proxybot.yaml")
        old = key_of(server)
        assert server.platform is not None
        new = server.platform.rotate_key()
        out = proxybot(config, "fleet")
        assert out.returncode == 2, (out.stdout, out.stderr)
        shown = out.stdout + out.stderr
        assert f"platform.url {server.base_url}" in shown
        assert "401" in shown
        assert old not in shown
        assert new not in shown
        # The key file is read again at each call: the new key mounted, the next reading works.
        (config.parent / "proxybot.access-key").write_text(new + "\n")
        code, report, shown = run(config, "fleet")
        assert (code, report["error"]) == (1, None)
        assert new not in shown


def test_a_wrong_key_in_the_file_is_refused_in_json_too(
    healthy: tuple[RecordingSimServer, Path], tmp_path: Path
) -> None:
    server, config = healthy
    wrong = "lk-not-the-platforms-key-0123456789"
    code, report, shown = run(with_key(config, tmp_path, wrong), "fleet")
    assert (code, report["passed"], report["verdict"], report["rows"]) == (2, False, "unreadable", [])
    assert report["platform"] == server.base_url
    assert report["error"].startswith(f"platform.url {server.base_url}: 401")
    assert wrong not in shown
    assert key_of(server) not in shown


@pytest.mark.parametrize("projects", [[PROJECT], []])
def test_a_project_scoped_key_reads_its_project(
    healthy: tuple[RecordingSimServer, Path], tmp_path: Path, projects: list[str]
) -> None:
    """With `platform.projects` (or the key's own scope, from its `Self`), one namespaced list: the scoped
    key may not list across projects."""
    server, config = healthy
    assert server.platform is not None
    key = server.platform.scoped_key(PROJECT)
    before = len(server.requests)
    code, report, shown = run(with_key(config, tmp_path, key, projects=projects), "fleet")
    assert (code, report["error"]) == (1, None)
    rows = {r["name"]: r for r in report["rows"]}
    assert set(rows) == {CLIENT, "team-b", REFUSED_CLIENT}
    assert [t["name"] for t in rows[CLIENT]["targets"]] == [DISCOVERED]
    lists = [p for _, p, _ in server.requests[before:] if p.endswith("/virtualclusterinstances")]
    assert lists == [
        f"/kubernetes/management/apis/management.loft.sh/v1/namespaces/p-{PROJECT}/virtualclusterinstances"
    ]
    assert key not in shown


def test_a_project_scoped_key_asked_for_another_project_is_refused_403(
    healthy: tuple[RecordingSimServer, Path], tmp_path: Path
) -> None:
    server, config = healthy
    assert server.platform is not None
    key = server.platform.scoped_key(PROJECT)
    code, report, shown = run(with_key(config, tmp_path, key, projects=["other"]), "fleet")
    assert code == 2
    assert report["error"].startswith(f"platform.url {server.base_url}: 403")
    assert key not in shown


async def test_a_refused_reading_raises_401_and_writes_no_kubeconfig(
    healthy: tuple[RecordingSimServer, Path], tmp_path: Path
) -> None:
    _, config = healthy
    path = with_key(config, tmp_path / "cfg", "lk-wrong-key-0123456789")
    (tmp_path / "private").mkdir()
    reader = FleetReader(load_config(path, env={}).settings, directory=tmp_path / "private")
    try:
        with pytest.raises(PlatformError) as refused:
            await reader.read()
    finally:
        await reader.aclose()
    assert refused.value.status == 401
    assert "lk-wrong-key-0123456789" not in str(refused.value)
    assert not reader.kubeconfig.exists()  # no paths written from a refused reading


def test_the_demo_fleet_is_found_whole_through_the_platform(tmp_path: Path) -> None:
    # The demo's fleet: 3 clients in 2 projects and 12 targets, two of them shared, one pair relayed.
    with SimServer(scenario="healthy", speed=20, platform=True, wide=True) as server:
        config = server.write_config(tmp_path / "proxybot.yaml")
        expected = expected_fleet(kubectl_instances(config))
        fleet = discovered(config)
    assert found(fleet) == expected
    clients = expected[0]
    assert sorted(clients) == ["payments-api", "risk-engine", CLIENT]
    assert len({t for targets in clients.values() for t in targets}) == 12
    assert {c.row.project for c in fleet.clients if c.settings} == {"payments", PROJECT}
    assert clients["payments-api"] & clients["risk-engine"] == {"payments/ledger"}
    assert clients[CLIENT] & clients["payments-api"] == {f"{PROJECT}/search-index"}
    assert not fleet.problems
