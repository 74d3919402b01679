"""The client control planes' logs: the log reference's lines written at the moments the model reaches them,
and served as `pods/NAME/log` that real kubectl reads (`-l app=vcluster --prefix`, `--tail`, `--since`,
`--timestamps`), with the API server's refusals."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sim.defaults import CLIENT, PRIMARY_GV, TARGET_LABEL
from sim.kube.api import Query, parse_resource_path
from sim.kube.pod_logs import serve_log
from sim.names import Verb
from sim.proxy import ProxyRequest
from sim.scenarios import build_world
from sim.server import SimServer
from sim.syncer_log import (
    ALL_QUARANTINED,
    CREATING_NAMESPACE,
    INITIAL_PROBE_FAILED,
    QUARANTINING,
    STARTING_PROXY,
    STARTING_TRANSPORT,
    STARTUP_SYNC_TIMEOUT,
    WATCH_DOWN,
    LogRecord,
    go_duration,
)
from sim.world import World

KUBECTL = "/usr/bin/kubectl"
NAMESPACE = f"vcluster-{CLIENT}"
POD = f"{CLIENT}-0"


def records(world: World, pod: str = POD) -> list[LogRecord]:
    return list(world.proxies[(CLIENT, pod)].journal.log.records)


def at(world: World, message: str, pod: str = POD) -> list[float]:
    return [r.at for r in records(world, pod) if r.message == message]


# -- the moments -----------------------------------------------------------------------------------


def test_every_replica_starts_with_the_pair_per_group_version_and_a_healthy_one_says_nothing_more() -> None:
    world = build_world("healthy")
    world.advance_to(600)
    messages = [r.message for r in records(world)]
    assert messages == [STARTING_PROXY, STARTING_TRANSPORT] * 2
    started = [dict(r.fields)["groupVersion"] for r in records(world) if r.message == STARTING_PROXY]
    assert started == [PRIMARY_GV, "data.example.com/v1alpha1"]


def test_target_down_quarantines_with_host_failures_and_target() -> None:
    world = build_world("target-down")
    world.advance_to(59)
    assert at(world, QUARANTINING) == []
    world.advance_to(130)
    quarantines = [r for r in records(world) if r.message == QUARANTINING]
    assert quarantines
    assert 60 <= quarantines[0].at <= 70  # three 5 s dial failures after the hang at t=60
    fields = dict(quarantines[0].fields)
    assert fields["target"] == TARGET_LABEL
    assert fields["consecutiveFailures"] == 3
    assert str(fields["host"]).endswith(".vcluster.invalid")
    # With one endpoint, each quarantine leaves none selectable: both lines come together.
    assert at(world, ALL_QUARANTINED) == at(world, QUARANTINING)


def test_peer_watch_drop_logs_watch_down_once_the_list_is_distrusted() -> None:
    world = build_world("peer-watch-dropped")
    world.advance_to(120)
    assert at(world, WATCH_DOWN) == []  # dropped at t=60: trusted for 60 s more
    world.advance_to(400)
    assert at(world, WATCH_DOWN) == [121.0, 121.0]  # once per group/version, not every second
    ages = {dict(r.fields)["lastNetmapAge"] for r in records(world) if r.message == WATCH_DOWN}
    assert ages == {"2m1s"}


def test_license_failure_restarts_without_a_peer_list_and_times_out_the_startup_sync() -> None:
    world = build_world("license-failure")
    world.advance_to(119)
    assert [r.at for r in records(world)] == [60.0] * 4  # the new process: its startup pair only
    world.advance_to(200)
    assert at(world, STARTUP_SYNC_TIMEOUT) == [120.0, 120.0]
    failed = [dict(r.fields) for r in records(world) if r.message == INITIAL_PROBE_FAILED]
    assert len(failed) == 2
    assert "kube.crd-store.platform.vcluster.invalid" in str(failed[0]["error"])


def test_ha_split_only_the_dropped_replica_logs_watch_down() -> None:
    world = build_world("ha-split")
    world.advance_to(300)
    assert at(world, WATCH_DOWN, f"{CLIENT}-0") == []
    assert len(at(world, WATCH_DOWN, f"{CLIENT}-1")) == 2


def test_a_first_write_to_a_namespace_the_target_lacks_mirrors_it() -> None:
    world = build_world("healthy")
    world.advance_to(5)
    world.platform.clients[CLIENT].namespaces.add("team-ns")
    proxy = world.proxies[(CLIENT, POD)]
    for _ in range(2):
        proxy.request(ProxyRequest(TARGET_LABEL, PRIMARY_GV, Verb.POST, "widgets", namespace="team-ns"))
    assert len(at(world, CREATING_NAMESPACE)) == 1
    assert "team-ns" in world.platform.targets["crd-store"].namespaces


def test_go_durations() -> None:
    assert [go_duration(s) for s in (0, 45, 121, 3605)] == ["0s", "45s", "2m1s", "1h0m5s"]


# -- the endpoint --------------------------------------------------------------------------------


def ask(world: World, params: dict[str, str], pod: str = POD) -> tuple[int, str]:
    rp = parse_resource_path(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/log")
    assert rp is not None
    reply = serve_log(world, rp, Query("GET", rp.plural, params))
    return reply.code, reply.body if isinstance(reply.body, str) else str(reply.body["message"])


@pytest.mark.parametrize(
    ("params", "refusal"),
    [
        ({"tailLines": "-1"}, "tailLines"),
        ({"tailLines": "ten"}, "tailLines"),
        ({"sinceSeconds": "0"}, "sinceSeconds"),
        ({"sinceSeconds": "5", "sinceTime": "2024-01-01T00:00:00Z"}, "at most one"),
        ({"sinceTime": "yesterday"}, "sinceTime"),
        ({"timestamps": "yes"}, "timestamps"),
        ({"container": "sidecar"}, "container sidecar is not valid"),
        ({"previous": "true"}, "previous terminated container"),
    ],
)
def test_bad_options_are_refused_as_the_api_server_does(params: dict[str, str], refusal: str) -> None:
    world = build_world("healthy")
    world.advance_to(1)
    code, said = ask(world, params)
    assert code == 400
    assert refusal in said


def test_tail_since_timestamps_and_limit_bytes_select_lines() -> None:
    world = build_world("target-down", epoch=1_700_000_000.0)
    world.advance_to(300)
    _, everything = ask(world, {})
    lines = everything.splitlines()
    _, tail = ask(world, {"tailLines": "3"})
    assert tail.splitlines() == lines[-3:]
    _, none = ask(world, {"tailLines": "0"})
    assert none == ""
    _, recent = ask(world, {"sinceSeconds": "30"})
    assert 0 < len(recent.splitlines()) < len(lines)
    assert all(STARTING_PROXY not in line for line in recent.splitlines())  # written at t=0
    _, stamped = ask(world, {"timestamps": "true", "tailLines": "1"})
    assert stamped.startswith("2023-11-14T22:")
    assert stamped.split(" ", 1)[1] == tail.splitlines()[-1] + "\n"
    _, cut = ask(world, {"limitBytes": "10"})
    assert len(cut.encode()) == 10


def test_an_unknown_pod_is_not_found() -> None:
    world = build_world("healthy")
    world.advance_to(1)
    assert ask(world, {}, pod="team-a-7")[0] == 404


# -- real kubectl ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimServer, Path]]:
    with SimServer(scenario="ha-split", speed=20) as server:
        with server.lock:
            server.world.advance_to(200)
        yield server, server.write_config(tmp_path_factory.mktemp("cfg") / "proxybot.yaml")


def kubectl(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    kubeconfig = config.parent / "proxybot.kubeconfigs" / "control-plane.yaml"
    cmd = [KUBECTL, "--kubeconfig", str(kubeconfig), "-n", NAMESPACE, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def test_kubectl_logs_every_replica_with_prefix(written: tuple[SimServer, Path]) -> None:
    out = kubectl(written[1], "logs", "-l", "app=vcluster", "--tail=100", "--prefix")
    assert out.returncode == 0, out.stderr
    by_pod: dict[str, list[str]] = {}
    for line in out.stdout.splitlines():
        prefix, _, rest = line.partition(" ")
        by_pod.setdefault(prefix, []).append(rest)
    assert set(by_pod) == {f"[pod/{CLIENT}-0/syncer]", f"[pod/{CLIENT}-1/syncer]"}
    assert not any(WATCH_DOWN in line for line in by_pod[f"[pod/{CLIENT}-0/syncer]"])
    assert sum(WATCH_DOWN in line for line in by_pod[f"[pod/{CLIENT}-1/syncer]"]) == 2


def test_kubectl_logs_one_pod_with_timestamps_and_tail(written: tuple[SimServer, Path]) -> None:
    out = kubectl(written[1], "logs", f"{CLIENT}-1", "--timestamps", "--tail=1")
    assert out.returncode == 0, out.stderr
    [line] = out.stdout.splitlines()
    stamp, _, entry = line.partition(" ")
    assert stamp.endswith("Z")
    assert len(stamp.split(".")[1]) == 10  # nanoseconds and the Z
    assert WATCH_DOWN in entry
    assert '"lastNetmapAge": "2m1s"' in entry


def test_kubectl_logs_since_and_a_missing_pod(written: tuple[SimServer, Path]) -> None:
    recent = kubectl(written[1], "logs", f"{CLIENT}-0", "--since=1s")
    assert recent.returncode == 0, recent.stderr
    assert STARTING_PROXY not in recent.stdout  # written at t=0, more than a second of wall time ago
    missing = kubectl(written[1], "logs", f"{CLIENT}-9")
    assert missing.returncode != 0
    assert f'pods "{CLIENT}-9" not found' in missing.stderr


def test_kubectl_gets_the_control_plane_pods(written: tuple[SimServer, Path]) -> None:
    out = kubectl(written[1], "get", "pods", "-l", "app=vcluster", "-o", "name")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [f"pod/{CLIENT}-0", f"pod/{CLIENT}-1"]
