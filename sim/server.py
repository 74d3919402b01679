"""The HTTPS server: every simulated cluster behind one port, bearer-token auth, a real CA, a pump thread."""

from __future__ import annotations

import asyncio
import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal, TypeVar

import trustme
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from sim.clock import ScaledWallClock
from sim.defaults import CONTROL_PLANE
from sim.kube import objects
from sim.kube.api import Query, Reply
from sim.kube.clusters import ClientView, ClusterView, ControlPlaneView, TargetView
from sim.kube.resources import kube_state_metrics
from sim.kubeconfig import Contexts, write_config, write_platform_config
from sim.platform import PlatformStandIn
from sim.platform_watch import is_watch, stream
from sim.scenarios import build_world
from sim.world import World

KSM_PATH = "/kube-state-metrics/metrics"
METRICS_PATH = "/metrics/syncer"
# Never hold a caller longer than this in wall seconds, whatever the simulated latency.
MAX_REAL_DELAY = 20.0
MAX_BODY = 1 << 20
# The simulated seconds before a hold that are skipped in one step (`SimServer`).
HOLD_SNAP = 1.0
ClusterKind = Literal["client", "target", "control-plane"]
FaultKind = Literal["hang", "slow", "error", "unauthorized"]
T = TypeVar("T")


@dataclass(frozen=True)
class ApiFault:
    """How one cluster's API server misbehaves, for every request that reaches it (its replicas too).

    hang: accepts and never answers (until the simulator stops); slow: answers after `seconds` wall
    seconds; error: 500 InternalError; unauthorized: 401, whatever the token (a revoked credential).
    """

    kind: FaultKind
    seconds: float = 3.0


@dataclass(frozen=True)
class ClusterInfo:
    """One cluster the server speaks for: its name, kind and server URL."""

    name: str
    kind: ClusterKind
    server_url: str


class SimServer:
    """Serve a scenario's clusters over HTTPS on one port; use as a context manager.

    `with SimServer(scenario="target-down", speed=20) as srv:` then `srv.base_url`, `srv.token`,
    `srv.cluster_url("team-a")`, `srv.ca_path`, `srv.write_config(path)`. With `hold_at` the simulated clock
    stops at that second (`held` once there): the clusters keep answering with that moment's state and the
    alerting model sees no time pass, so what follows no longer depends on how fast the machine is (the
    demo's tour holds a stop once what it shows has happened, for the README's pictures). The last
    `HOLD_SNAP` simulated seconds before it are skipped in one step, so whatever falls due in them (a
    notification) is seen only once the clock is held. `epoch` is the unix time shown for t=0 (default:
    now); `advance` moves the world to a simulated second (default `World.advance_to`; the demo's alerting
    model, which must see each of its ticks at its own second, takes it over).
    """

    def __init__(
        self,
        scenario: str = "healthy",
        speed: float = 1.0,
        seed: int = 7,
        host: str = "127.0.0.1",
        port: int = 0,
        clients: int = 1,
        hold_at: float | None = None,
        epoch: float | None = None,
        platform: bool = False,
        wide: bool = False,
    ) -> None:
        self.scenario = scenario
        self.speed = speed
        self.hold_at = hold_at
        self.host = host
        shown = time.time() if epoch is None else epoch
        # `wide`: the scenario in the demo's fleet (3 clients, 2 projects, a dozen targets) around its pair.
        self.world: World = build_world(
            scenario, seed=seed, epoch=shown, speed=speed, clients=clients, wide=wide
        )
        self.advance: Callable[[float], object] = self.world.advance_to
        self.lock = threading.Lock()
        self.token = secrets.token_urlsafe(24)
        # A second identity that may read the API but lacks `get` on the /metrics/syncer non-resource URL.
        self.limited_token = secrets.token_urlsafe(24)
        self._tmp = tempfile.TemporaryDirectory(prefix="proxybot-sim-")
        self.ca_path, self._cert, self._key = _write_tls(Path(self._tmp.name))
        # IPPROTO_TCP spelled out: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and an
        # accepted socket inherits the listener's 0; without it Nagle holds each response's body behind
        # its headers until the caller's delayed ACK (about 40 ms a request on loopback).
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self.port: int = self._socket.getsockname()[1]
        self._views = self._build_views()
        # `platform=True`: the vCluster Platform stand-in answers its paths and its access key's requests.
        self.platform = PlatformStandIn(self.world, self._view_of) if platform else None
        self._platform_fault: ApiFault | None = None
        # kubectl's `get --raw` drops the server URL's path, so each cluster's own tokens also route to it.
        self._identities: dict[str, tuple[str | None, bool]] = {
            self.token: (None, True),
            self.limited_token: (None, False),
        }
        self._cluster_tokens: dict[tuple[str, bool], str] = {}
        self._faults: dict[str, ApiFault] = {}
        # Set (on the server's loop) at stop, so hung requests end and the server can exit.
        self._unhang: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        for key in self._views:
            self._mint_tokens(key)
        self._server: uvicorn.Server | None = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    # -- addresses -----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"https://{self.host}:{self.port}"

    @property
    def ksm_url(self) -> str:
        return self.base_url + KSM_PATH

    @property
    def ca_pem(self) -> bytes:
        return self.ca_path.read_bytes()

    def cluster_url(self, name: str, pod: str | None = None) -> str:
        """Server URL of one cluster; with `pod`, one client replica pinned (not load-balanced)."""
        return f"{self.base_url}/clusters/{name}" + (f"/pods/{pod}" if pod else "")

    def clusters(self) -> list[ClusterInfo]:
        out = [ClusterInfo(c, "client", self.cluster_url(c)) for c in self.world.platform.clients]
        out += [ClusterInfo(t, "target", self.cluster_url(t)) for t in self.world.platform.targets]
        return [*out, ClusterInfo(CONTROL_PLANE, "control-plane", self.cluster_url(CONTROL_PLANE))]

    def _mint_tokens(self, key: str) -> None:
        for full in (True, False):
            token = secrets.token_urlsafe(24)
            self._identities[token] = (key, full)
            self._cluster_tokens[(key, full)] = token

    def token_for(self, name: str, pod: str | None = None, *, metrics: bool = True) -> str:
        """A token bound to one cluster (or replica); `metrics=False` lacks get on /metrics/syncer. A tenant
        the fleet gained since the start (`fleet-grows`) gets its tokens when first asked."""
        key = f"{name}/pods/{pod}" if pod else name
        if (key, metrics) not in self._cluster_tokens and self._view_of(key) is not None:
            with self.lock:
                if (key, metrics) not in self._cluster_tokens:
                    self._mint_tokens(key)
        return self._cluster_tokens[(key, metrics)]

    def pods(self, client: str) -> list[str]:
        return [r.pod for r in self.world.platform.clients[client].replicas]

    def set_fault(self, cluster: str, fault: ApiFault | None) -> None:
        """Make `cluster`'s API server (and its replicas') misbehave from the next request; None heals it."""
        if cluster not in self._views:
            raise KeyError(f"no simulated cluster {cluster!r}")
        if fault is None:
            self._faults.pop(cluster, None)
        else:
            self._faults[cluster] = fault

    def set_platform_fault(self, fault: ApiFault | None) -> None:
        """Make the platform stand-in (all its paths) misbehave from the next request; None heals it."""
        if self.platform is None:
            raise KeyError("this simulator does not play the platform (platform=True)")
        self._platform_fault = fault

    @property
    def platform_url(self) -> str:
        """The platform's URL (what `platform.url` names); the management API is under it."""
        if self.platform is None:
            raise KeyError("this simulator does not play the platform (platform=True)")
        return self.base_url

    def platform_contexts(self) -> dict[str, tuple[str, str]]:
        """The platform's kubeconfig contexts, all with its access key: `management`, `<project>/<name>` per
        instance a simulated cluster serves, `cluster/<name>` for the connected cluster."""
        if self.platform is None:
            raise KeyError("this simulator does not play the platform (platform=True)")
        platform, key = self.platform, self.platform.access_key
        found = {"management": (self.base_url + platform.management_path, key)}
        with self.lock:
            instances = platform.inventory.refresh()
        for i in instances:
            if i.served_by is not None:
                found[f"{i.project}/{i.name}"] = (
                    self.base_url + platform.virtual_cluster_path(i.project, i.name),
                    key,
                )
        found[f"cluster/{CONTROL_PLANE}"] = (self.base_url + platform.cluster_path(CONTROL_PLANE), key)
        return found

    def kube_contexts(self) -> Contexts:
        """Each cluster's kubeconfig contexts: `<cluster>`, `<cluster>-no-metrics`, and `<pod>` per client
        replica (pinned to that pod)."""
        found: Contexts = {}
        for info in self.clusters():
            contexts = {info.name: (info.server_url, self.token_for(info.name))}
            if info.kind == "client":
                for pod in self.pods(info.name):
                    contexts[pod] = (self.cluster_url(info.name, pod), self.token_for(info.name, pod))
            contexts[f"{info.name}-no-metrics"] = (info.server_url, self.token_for(info.name, metrics=False))
            found[info.name] = contexts
        return found

    def write_config(self, path: Path) -> Path:
        """Kubeconfigs for every cluster and a proxybot config at `path` pointing at them; when the simulator
        plays the platform, a config with `platform:` (its URL, key file and CA) and no `clusters:`."""
        if self.platform is not None:
            key, served = self.platform.access_key, self.platform_contexts()
            return write_platform_config(
                path, self.base_url, key, self.ca_pem, served, scenario=self.scenario
            )
        contexts = self.kube_contexts()
        return write_config(
            path, self.world, self.ca_pem, contexts, scenario=self.scenario, ksm_url=self.ksm_url
        )

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> SimServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        self._clock = ScaledWallClock(self.speed)
        with self.lock:
            self.advance(0.0)
        config = uvicorn.Config(
            self.app(),
            ssl_certfile=str(self._cert),
            ssl_keyfile=str(self._key),
            log_level="warning",
            lifespan="off",
            access_log=False,
        )
        self._server = uvicorn.Server(config)
        serve = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)
        pump = threading.Thread(target=self._pump, daemon=True)
        self._threads = [serve, pump]
        for thread in self._threads:
            thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not serve.is_alive():
                raise RuntimeError("the simulator's HTTPS server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        if self._unhang is not None:
            loop, unhang = self._unhang
            loop.call_soon_threadsafe(unhang.set)
        if self._server is not None:
            self._server.should_exit = True
        for thread in self._threads:
            thread.join(timeout=10)
        self._socket.close()
        self._tmp.cleanup()

    def wait(self) -> None:
        """Block until interrupted (the CLI)."""
        while not self._stop.wait(0.5):
            pass

    def _pump(self) -> None:
        """Keep the simulated world up with (scaled) wall time, so traffic flows between requests."""
        while not self._stop.wait(0.1):
            self.catch_up()

    def catch_up(self) -> None:
        with self.lock:
            self.advance(self._target())

    def _target(self) -> float:
        """The simulated second to catch up with: (scaled) wall time, or the hold once it is near."""
        chased = self._clock.now()
        if self.hold_at is not None and chased >= self.hold_at - HOLD_SNAP:
            chased = self.hold_at
        return max(self.world.now(), chased)

    def shown_time(self) -> float:
        """The unix time of the simulated now, as the clusters show it; it stops once the clock is held."""
        return self.world.wall_time(self.world.now())

    def running_time(self) -> float:
        """Unix time from `epoch` at wall pace since the start, held or not (what work is paced by)."""
        return self.world.epoch + self._clock.now() / self.speed

    @property
    def held(self) -> bool:
        """The simulated clock has reached `hold_at` and stays there."""
        return self.hold_at is not None and self.world.now() >= self.hold_at

    # -- HTTP ----------------------------------------------------------------------------------

    def _view_of(self, name: str) -> ClusterView | None:
        """A cluster's view by name; a tenant the fleet gained since the start gets one now."""
        view = self._views.get(name)
        if view is None and name in self.world.platform.clients:
            view = self._views[name] = ClientView(self.world, self.world.platform.clients[name])
        elif view is None and name in self.world.platform.targets:
            view = self._views[name] = TargetView(self.world, self.world.platform.targets[name])
        return view

    def _build_views(self) -> dict[str, ClusterView]:
        views: dict[str, ClusterView] = {CONTROL_PLANE: ControlPlaneView(self.world)}
        for name, client in self.world.platform.clients.items():
            views[name] = ClientView(self.world, client)
            for replica in client.replicas:
                views[f"{name}/pods/{replica.pod}"] = ClientView(self.world, client, replica.pod)
        for name, target in self.world.platform.targets.items():
            views[name] = TargetView(self.world, target)
        return views

    def app(self) -> Starlette:
        methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
        return Starlette(routes=[Route("/{path:path}", self._endpoint, methods=methods)])

    async def _endpoint(self, request: Request) -> Response:
        faulty = await self._fault(request)
        if faulty is not None:
            return faulty
        path, token = request.url.path, self._bearer(request)
        platform = self.platform
        if platform is not None and platform.answers(path, token):
            routed = await asyncio.to_thread(self._locked, lambda: platform.route(path, token))
            if isinstance(routed, Reply):
                return _json(routed)
            if routed.view is platform.management and is_watch(request.query_params):
                return self._watch(platform, routed.path, request)
            return await self._serve(request, routed.view, routed.path)
        identity = self._identities.get(token)
        if identity is None:
            return _json(Reply(401, objects.status(401, "Unauthorized")))
        bound, may_read_metrics = identity
        if path == KSM_PATH:
            text = await asyncio.to_thread(self._locked, lambda: kube_state_metrics(self.world))
            return PlainTextResponse(text, media_type="text/plain; version=0.0.4")
        view, rest = self._route(path, bound)
        if view is None:
            return _json(Reply(404, objects.status(404, f"no simulated cluster serves {path}")))
        if rest == METRICS_PATH and not may_read_metrics:
            msg = (
                f'forbidden: User "system:serviceaccount:monitoring:limited" cannot get path "{METRICS_PATH}"'
            )
            return _json(Reply(403, objects.status(403, msg)))
        return await self._serve(request, view, rest)

    def _watch(self, platform: PlatformStandIn, path: str, request: Request) -> Response:
        """A watch on the platform's instances, streamed until its timeout or the simulator's stop."""
        if request.method != "GET":
            return _json(Reply(405, objects.status(405, "a watch is a GET")))
        watch = platform.watch(path, request.query_params)
        if isinstance(watch, Reply):
            return _json(watch)
        events = stream(watch, lambda: self._locked(platform.read), self._stop.is_set)
        return StreamingResponse(events, media_type="application/json")

    async def _serve(self, request: Request, view: ClusterView, rest: str) -> Response:
        """One request answered by one cluster's view, after its simulated latency."""
        body = await request.body() if request.method in ("POST", "PUT", "PATCH") else b""
        if len(body) > MAX_BODY:
            return _json(Reply(413, objects.status(413, f"request body over {MAX_BODY} bytes")))
        query = Query(
            request.method,
            rest,
            dict(request.query_params),
            request.headers.get("accept", "application/json"),
            "upgrade" in request.headers.get("connection", "").lower(),
            body,
        )
        reply = await asyncio.to_thread(self._locked, lambda: view.handle(query))
        if reply.took > 0:
            await asyncio.sleep(min(reply.took / self.speed, MAX_REAL_DELAY))
        return _json(reply)

    def _fault_of(self, request: Request) -> ApiFault | None:
        """The fault of what a request reaches: the platform (any of its requests) or one cluster."""
        path, token = request.url.path, self._bearer(request)
        parts = path.split("/")
        cluster: str | None = None
        if self.platform is not None and self.platform.answers(path, token):
            if self._platform_fault is not None:
                return self._platform_fault
            cluster = self.platform.cluster_of(path)
        elif len(parts) >= 3 and parts[1] == "clusters":
            cluster = parts[2]
        else:
            bound = self._identities.get(token, (None, True))[0]
            cluster = None if bound is None else bound.split("/")[0]
        return None if cluster is None else self._faults.get(cluster)

    async def _fault(self, request: Request) -> Response | None:
        """The answer of a faulty cluster's API server, or None to answer normally (after any delay)."""
        if not self._faults and self._platform_fault is None:
            return None
        fault = self._fault_of(request)
        if fault is None:
            return None
        if fault.kind == "unauthorized":
            return _json(Reply(401, objects.status(401, "Unauthorized")))
        if fault.kind == "error":
            return _json(
                Reply(500, objects.status(500, "Internal error occurred: etcdserver: request timed out"))
            )
        if fault.kind == "slow":
            await asyncio.sleep(fault.seconds)
            return None
        # hang: the connection stays open and nothing is written, until the simulator stops.
        if self._unhang is None:
            self._unhang = (asyncio.get_running_loop(), asyncio.Event())
        await self._unhang[1].wait()
        return _json(Reply(503, objects.status(503, "the simulator is stopping")))

    def _locked(self, work: Callable[[], T]) -> T:
        with self.lock:
            self.world.advance_to(self._target())
            return work()

    def _route(self, path: str, bound: str | None) -> tuple[ClusterView | None, str]:
        parts = path.split("/")
        if len(parts) < 3 or parts[1] != "clusters":
            return (self._views.get(bound), path) if bound else (None, path)
        if len(parts) >= 5 and parts[3] == "pods":
            key, rest = f"{parts[2]}/pods/{parts[4]}", parts[5:]
        else:
            key, rest = parts[2], parts[3:]
        return self._views.get(key), "/" + "/".join(rest)

    @staticmethod
    def _bearer(request: Request) -> str:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        return value.strip() if scheme.lower() == "bearer" else ""


def _json(reply: Reply) -> Response:
    if isinstance(reply.body, str):
        return PlainTextResponse(reply.body, status_code=reply.code, headers=reply.headers)
    return JSONResponse(reply.body, status_code=reply.code, headers=reply.headers)


def _write_tls(directory: Path) -> tuple[Path, Path, Path]:
    """A fresh CA and a server certificate for the loopback names; returns (ca, cert chain, key) files."""
    ca = trustme.CA(organization_name="proxybot simulator")
    cert = ca.issue_cert("127.0.0.1", "localhost", "::1")
    ca_path, cert_path, key_path = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    ca.cert_pem.write_to_path(str(ca_path))
    cert.private_key_pem.write_to_path(str(key_path))
    for i, blob in enumerate(cert.cert_chain_pems):
        blob.write_to_path(str(cert_path), append=i > 0)
    return ca_path, cert_path, key_path
