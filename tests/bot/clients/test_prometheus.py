"""PrometheusClient against a real Prometheus 2.42 scraping the simulator, dead or mute servers, and a local
HTTPS server that wants credentials."""

from __future__ import annotations

import base64
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.clients.prometheus import PrometheusClient, promql_string, selector
from bot.domain.parser import parse_syncer
from bot.domain.snapshot import PEER_CACHE_SYNCED, PEERS, label
from bot.errors import InputError, UpstreamError
from config.settings import PrometheusSettings
from sim.defaults import CLIENT, TARGET_LABEL
from sim.server import METRICS_PATH, SimServer
from tests.fakes.http_server import LocalServer, Request
from tests.fakes.sim_scrape import syncer_jobs
from tests.harness.prometheus import Prometheus

RULES = Path(__file__).resolve().parents[3] / "config" / "rules" / "proxy-alerts.yaml"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(scenario="healthy", speed=1) as server:
        yield server


@pytest.fixture(scope="module")
def prometheus(sim: SimServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    workdir = tmp_path_factory.mktemp("prometheus")
    rules = {"proxy-alerts.yaml": RULES.read_text()}
    with Prometheus(workdir, syncer_jobs(sim), rules, interval="1s") as prom:
        prom.wait_for_scrapes()
        # Two scrapes at least, so that range queries and rates have points to work with.
        prom.wait_until(lambda p: p.query("count_over_time(up[1m]) >= 3") or None, 30, "three scrapes")
        yield prom


def exposed_page(sim: SimServer, pod: str) -> str:
    url = f"{sim.cluster_url(CLIENT, pod)}{METRICS_PATH}"
    headers = {"Authorization": f"Bearer {sim.token}"}
    return httpx.get(
        url, headers=headers, verify=ssl.create_default_context(cafile=str(sim.ca_path)), timeout=10
    ).text


async def test_instant_query_returns_what_the_simulator_exposes(
    sim: SimServer, prometheus: Prometheus
) -> None:
    pod = sim.pods(CLIENT)[0]
    exposed = parse_syncer(exposed_page(sim, pod)).series(PEERS, target=TARGET_LABEL)
    async with PrometheusClient(prometheus.url) as client:
        found = await client.query(selector(PEERS, {"target": TARGET_LABEL, "pod": pod}))
    # The healthy scenario keeps its peer gauges steady, so the last scrape and a fresh page agree.
    assert {(s.labels["group_version"], s.labels["state"]): s.value for s in found} == {
        (label(k, "group_version"), label(k, "state")): v for k, v in exposed.items()
    }
    assert all(s.labels["cluster"] == CLIENT and s.labels["__name__"] == PEERS for s in found)
    assert len(found) == 6  # two group/versions, all three states each


async def test_range_query_returns_points_over_the_range(sim: SimServer, prometheus: Prometheus) -> None:
    pod = sim.pods(CLIENT)[0]
    end = time.time()
    async with PrometheusClient(prometheus.url) as client:
        found = await client.query_range(
            selector(PEER_CACHE_SYNCED, {"target": TARGET_LABEL, "pod": pod}), start=end - 2, end=end, step=1
        )
    assert {s.labels["group_version"] for s in found} == {
        label(k, "group_version")
        for k in parse_syncer(exposed_page(sim, pod)).series(PEER_CACHE_SYNCED, target=TARGET_LABEL)
    }
    for series in found:
        assert [v for _, v in series.points] == [1.0] * len(series.points)
        times = [t for t, _ in series.points]
        assert times == sorted(times)
        assert len(times) == 3


async def test_counters_rise_between_two_instants(prometheus: Prometheus) -> None:
    expr = f"sum({selector('vcluster_proxy_request_total', {'target': TARGET_LABEL})})"
    async with PrometheusClient(prometheus.url) as client:
        [now] = await client.query(expr)
        earlier = await client.query(expr, at=now.at - 2)
    assert earlier
    assert 0 < earlier[0].value <= now.value


async def test_scalar_answers_as_one_unlabelled_sample(prometheus: Prometheus) -> None:
    async with PrometheusClient(prometheus.url) as client:
        [sample] = await client.query("scalar(vector(42))")
    assert sample.labels == {}
    assert sample.value == 42.0


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        'a"b',
        "back\\slash",
        'x"} or vector(1) #',
        "new\nline",
        "tab\tand\rcr",
        "ünïcödé ✓",
        "\x01\x7f",
    ],
)
async def test_promql_string_means_exactly_the_value(prometheus: Prometheus, value: str) -> None:
    # label_replace copies the literal into a label: Prometheus' own reading of what we escaped.
    expr = f'label_replace(vector(1), "echo", {promql_string(value)}, "", "")'
    async with PrometheusClient(prometheus.url) as client:
        [sample] = await client.query(expr)
    assert sample.labels["echo"] == value


async def test_a_hostile_label_value_matches_nothing_instead_of_injecting(prometheus: Prometheus) -> None:
    hostile = 'x"} or vector(1) or up{job="'
    async with PrometheusClient(prometheus.url) as client:
        assert await client.query(selector(PEERS, {"target": hostile})) == []


def test_selector_refuses_names_that_are_not_names() -> None:
    with pytest.raises(InputError):
        selector("up} or vector(1", {})
    with pytest.raises(InputError):
        selector("up", {'target"': "x"})


async def test_rules_lists_the_loaded_proxy_rules(prometheus: Prometheus) -> None:
    async with PrometheusClient(prometheus.url) as client:
        groups = await client.rules()
    rules = {rule.name: rule for group in groups for rule in group.rules}
    assert "ResourceProxyNoHealthyPeers" in rules
    assert all(rule.kind == "alerting" for rule in rules.values())
    assert {group.file for group in groups} == {str(prometheus.workdir / "proxy-alerts.yaml")}


async def test_targets_lists_each_replica_up(sim: SimServer, prometheus: Prometheus) -> None:
    async with PrometheusClient(prometheus.url) as client:
        targets = await client.targets()
    assert {t.labels["pod"] for t in targets} == set(sim.pods(CLIENT))
    assert all(t.health == "up" and t.last_error is None for t in targets)


async def test_a_bad_expression_is_refused_with_prometheus_reason(prometheus: Prometheus) -> None:
    async with PrometheusClient(prometheus.url) as client:
        with pytest.raises(UpstreamError, match=r"refused \(bad_data\)"):
            await client.query("sum(")


async def test_a_range_expression_is_not_an_instant_vector(prometheus: Prometheus) -> None:
    async with PrometheusClient(prometheus.url) as client:
        with pytest.raises(UpstreamError, match="not an instant vector"):
            await client.query("up[1m]")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_prometheus_down_is_an_upstream_error_naming_it() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    async with PrometheusClient(url, timeout=2) as client:
        with pytest.raises(UpstreamError, match="unreachable") as caught:
            await client.query("up")
    assert url in str(caught.value)


@pytest.fixture
def mute_server() -> Iterator[str]:
    """Accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


async def test_a_prometheus_that_never_answers_times_out(mute_server: str) -> None:
    async with PrometheusClient(mute_server, timeout=0.3) as client:
        with pytest.raises(UpstreamError, match=r"no answer within 0.3s"):
            await client.query("up")
        with pytest.raises(UpstreamError, match=r"no answer within 0.2s"):
            await client.rules(timeout=0.2)


async def test_credentials_in_the_url_never_appear_in_errors() -> None:
    url = f"http://admin:s3cret@127.0.0.1:{_closed_port()}"
    async with PrometheusClient(url, timeout=2) as client:
        assert "s3cret" not in client.url
        with pytest.raises(UpstreamError) as caught:
            await client.targets()
    assert "s3cret" not in str(caught.value)


async def test_an_answer_that_is_not_prometheus_json_is_an_upstream_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>bad gateway</html>")

    transport = httpx.MockTransport(handler)
    async with PrometheusClient("http://prometheus.invalid", transport=transport) as client:
        with pytest.raises(UpstreamError, match="HTTP 502 without JSON"):
            await client.query("up")


# -- TLS and authentication: a local HTTPS server that wants its credentials -----------------------------

EMPTY_VECTOR = {"status": "success", "data": {"resultType": "vector", "result": []}}


def _wants(header: str) -> Callable[[Request], tuple[int, Any]]:
    """Answers like Prometheus behind an authenticating proxy: 401 text unless `Authorization` is right."""

    def answer(request: Request) -> tuple[int, Any]:
        if request.headers.get("authorization") != header:
            return 401, b"Unauthorized\n"
        return 200, EMPTY_VECTOR

    return answer


async def test_a_bearer_token_file_and_a_ca_file_reach_a_prometheus_that_needs_them(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("prom-token\n")
    with LocalServer(_wants("Bearer prom-token"), tls=True) as server:
        settings = {
            "url": server.url,
            "bearer_token_file": str(tmp_path / "token"),
            "ca_file": str(server.ca_path),
        }
        async with PrometheusClient.from_settings(PrometheusSettings.model_validate(settings)) as client:
            assert await client.query("up") == []
        untrusted = {**settings, "ca_file": None}
        async with PrometheusClient.from_settings(PrometheusSettings.model_validate(untrusted)) as client:
            with pytest.raises(UpstreamError, match=r"unreachable.*CERTIFICATE_VERIFY_FAILED"):
                await client.query("up")
        anonymous = {"url": server.url, "ca_file": str(server.ca_path)}
        async with PrometheusClient.from_settings(PrometheusSettings.model_validate(anonymous)) as client:
            with pytest.raises(UpstreamError, match="answered HTTP 401 without JSON"):
                await client.query("up")
    assert [r.path for r in server.requests] == ["/api/v1/query", "/api/v1/query"]  # the untrusted never sent


async def test_basic_auth_with_a_password_file_reaches_prometheus(tmp_path: Path) -> None:
    (tmp_path / "password").write_text("s3cret\n")
    header = "Basic " + base64.b64encode(b"proxybot:s3cret").decode()
    with LocalServer(_wants(header), tls=True) as server:
        settings = PrometheusSettings.model_validate(
            {
                "url": server.url,
                "basic_auth": {"username": "proxybot", "password_file": str(tmp_path / "password")},
                "ca_file": str(server.ca_path),
            }
        )
        async with PrometheusClient.from_settings(settings) as client:
            assert await client.query("up") == []
