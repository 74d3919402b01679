"""`/proxy` through signed requests, the real Starlette route and bolt's dispatch, against the simulator.

Answers are read where Slack would receive them: the fake Slack's `response_url`s (and its Web API for
the buttons' thread replies). Requests reaching the simulator are recorded, so a test can say exactly
which API paths a command touched.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest
import yaml
from pydantic import SecretStr

from bot import compose
from bot.app import Deps, create_app
from bot.compose import slack_endpoints
from bot.domain.alerts import AlertStatus
from bot.domain.messages import ActionRef
from bot.domain.silences import Matcher, NewSilence, Silence
from bot.errors import InputError, Refused, UpstreamError
from bot.reads.context import CheckContext
from bot.render.slack import ACTION_PATH, ACTION_PROBE
from bot.store import AlertGroupState, Store
from config.loader import parse_config
from config.settings import Requester, Settings
from handlers import commands
from handlers.command_access import Asker, target_for
from handlers.commands import CommandDeps
from sim.slack_api import FakeSlack, iter_texts
from sim.slack_blocks import check_message
from tests.fakes.config_data import cluster as fleet_cluster
from tests.fakes.config_data import config as fleet_config
from tests.fakes.config_data import target as fleet_target
from tests.fakes.sim_scenarios import RecordingSimServer, started
from tests.fakes.slack_app import SocketSlack, store
from tests.fakes.slack_requests import (
    BOT_TOKEN,
    SIGNING_SECRET,
    asgi,
    button_body,
    command_body,
    signed,
)
from tests.waiting import eventually

__all__ = ["store"]  # the shared store fixture

TARGET = "platform/crd-store"
ALICE, BOB = "U0ALICE01", "U0BOB0001"  # Alice may silence and use DMs; Bob may only query from #ops
OPS, ALERTS, RANDOM, DM = "C0OPS0001", "C0ALERTS1", "C0RANDOM1", "D0DIRECT1"
CHANNEL_NAMES = {OPS: "ops", ALERTS: "alerts", RANDOM: "random", DM: "directmessage"}
PROBE = "/clusters/team-a/apis/example.com/v1/namespaces/default/widgets"
METRICS = "/clusters/team-a/metrics/syncer"
# The simulator's config lists team-a's replica, so status and peers read it by name.
REPLICA_METRICS = "/clusters/team-a/pods/team-a-0/metrics/syncer"
SILENCE_ID = "6b0e2a1c-8f44-4c31-9e55-2a6f0e1d7c11"
_keys = itertools.count()


# -- the simulator, one per scenario --------------------------------------------------------------------


@dataclass
class Sim:
    server: RecordingSimServer
    settings: Settings

    def since(self, mark: int) -> list[tuple[str, str, str]]:
        return self.server.requests[mark:]


def settings_for(config: Path, **extra: Any) -> Settings:
    raw = yaml.safe_load(config.read_text())
    raw["slack"] = {
        "bot_token": BOT_TOKEN,
        "signing_secret": SIGNING_SECRET,
        "api_url": "http://127.0.0.1:9/api/",  # replaced per test with the fake Slack's
        "default_channel": "#alerts",
    }
    raw["digest"] = {"enabled": False, "channel": "#digest"}
    raw["access"] = {
        "channels": [{"channel": "#ops", "clusters": ["*"]}],
        "silencers": [ALICE],
        "direct_messages": {"users": [ALICE], "clusters": ["team-a"]},
    }
    raw.update(extra)
    return parse_config(yaml.safe_dump(raw), base_dir=config.parent, env={}).settings


def _sim(tmp: pytest.TempPathFactory, scenario: str) -> Iterator[Sim]:
    for server, config in started(tmp, scenario):
        yield Sim(server, settings_for(config))


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from _sim(tmp_path_factory, "healthy")


@pytest.fixture(scope="module")
def target_down(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from _sim(tmp_path_factory, "target-down")


@pytest.fixture(scope="module")
def relay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from _sim(tmp_path_factory, "relay-fallback")


@pytest.fixture(scope="module")
def masked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from _sim(tmp_path_factory, "ownership-masked")


SCENARIOS = ["healthy", "target_down", "relay", "masked"]


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    channels = {channel: f"#{name}" for channel, name in CHANNEL_NAMES.items()}
    with FakeSlack(bot_token=BOT_TOKEN, channels=channels) as slack:
        yield slack


# -- fakes ----------------------------------------------------------------------------------------------


@dataclass
class FakeSilences:
    """Alertmanager's silences API: keeps what is created and expired, or fails with `error`."""

    error: Exception | None = None
    gate: asyncio.Event | None = None
    created: list[dict[str, Any]] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    known: list[Silence] = field(default_factory=list)

    async def _wait_or_fail(self) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.error is not None:
            raise self.error

    async def create_silence(self, silence: NewSilence) -> str:
        await self._wait_or_fail()
        span = silence.ends_at - silence.starts_at
        self.created.append({"matchers": silence.matchers, "span": span, "by": silence.created_by})
        self.created[-1]["comment"] = silence.comment
        return SILENCE_ID

    async def silences(self) -> list[Silence]:
        await self._wait_or_fail()
        return list(self.known)

    async def expire_silence(self, silence: str) -> None:
        await self._wait_or_fail()
        self.expired.append(silence)


def a_silence(target: str = TARGET, state: str = "active", silence_id: str = SILENCE_ID) -> Silence:
    at = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    return Silence(silence_id, state, (Matcher("target", target),), at, at, "alice", "upgrade")


# -- the bot --------------------------------------------------------------------------------------------


@dataclass
class Bot:
    http: httpx.AsyncClient
    fake: FakeSlack
    sim: Sim
    store: Store  # the bot's own

    async def ask(self, text: str, *, user: str = ALICE, channel: str = OPS, public: bool = False) -> Any:
        """Post `/proxy text`; the answers through its response_url, once the final one arrived."""
        key = f"k{next(_keys)}"
        body = command_body(
            text + (" public" if public else ""),
            self.fake.response_url(key),
            user=user,
            channel=channel,
            channel_name=CHANNEL_NAMES[channel],
        )
        answer = await self.http.post("/slack/events", content=body, headers=signed(body))
        assert (answer.status_code, answer.text) == (200, ""), "acked at once with an empty 200"
        return await eventually(lambda: _answered(self.fake, key), f"the answer to {text!r}", timeout=40)


def _answered(fake: FakeSlack, key: str) -> list[dict[str, Any]] | None:
    mine = [r for r in fake.responses if r["key"] == key]
    return mine if mine and not _is_progress(mine[-1]) else None


def _is_progress(response: dict[str, Any]) -> bool:
    # "reading …" notes are one section; every check's answer has a header first.
    return len(response.get("blocks") or []) <= 1 and str(response["text"]).endswith("…")


def shown(response: dict[str, Any]) -> str:
    """Everything a person sees in one answer: its fallback text and the text of its blocks."""
    return "\n".join([str(response["text"]), *iter_texts(response.get("blocks") or [])])


@pytest.fixture
async def bots(fake: FakeSlack, tmp_path: Path) -> AsyncIterator[Any]:
    built: list[tuple[httpx.AsyncClient, compose.Bot, asyncio.Task[None]]] = []

    async def make(
        sim: Sim, silences: FakeSilences | None = None, *, digest: bool = False, **update: Any
    ) -> Bot:
        slack = sim.settings.slack.model_copy(update={"api_url": fake.api_url})
        db = SecretStr(f"sqlite:///{tmp_path / f'bot-{len(built)}.db'}")
        store = sim.settings.store.model_copy(update={"url": db})
        settings = sim.settings.model_copy(update={"slack": slack, "store": store, **update})
        clients = replace(await compose.open_clients(settings), alertmanager=silences)
        bot = compose.build_bot(settings, clients)
        # `/proxy` over the bot's own checks and clients, with a short dial window (enough here), and
        # without its on-demand digest unless asked for: the commands must also work without one.
        tuned = replace(bot.commands, path_dial_window=1.0, digest=bot.commands.digest if digest else None)
        routes, workers = compose.slack_inbound(settings, bot.deps, tuned, clients.alertmanager, bot.delivery)
        http = asgi(create_app(bot.deps, workers, extra=routes))
        # The in-process client runs no lifespan: the delivery worker (the buttons' thread answers go
        # through the outbox) is started here.
        built.append((http, bot, asyncio.create_task(bot.delivery.run())))
        return Bot(http, fake, sim, clients.store)

    yield make
    for http, bot, delivering in built:
        await http.aclose()
        await bot.delivery.stop()
        await delivering
        await bot.close()


def sim_named(request: pytest.FixtureRequest, name: str) -> Sim:
    found: Sim = request.getfixturevalue(name)
    return found


# -- every subcommand on every scenario -----------------------------------------------------------------

POLICIES = "/clusters/control-plane/apis/networking.k8s.io/v1/namespaces/"
DIRECT = "/clusters/crd-store/apis/example.com/v1/namespaces/default/widgets"
CRONJOB = "/clusters/control-plane/apis/batch/v1/namespaces/vcluster-team-a/cronjobs/proxy-probe"
CONTROL_PLANE_PODS = "/clusters/control-plane/api/v1/namespaces/vcluster-team-a/pods"
NETPOL = "netpol --client vcluster-team-a/team-a --target vcluster-crd-store/crd-store"
APISERVICES = "/clusters/team-a/apis/apiregistration.k8s.io/v1/apiservices"
# What the quick triage reads beside the metrics: the target's pods, both StatefulSets, the APIServices.
TRIAGE = {
    "/clusters/control-plane/api/v1/namespaces/vcluster-crd-store/pods",
    "/clusters/control-plane/apis/apps/v1/namespaces/vcluster-crd-store/statefulsets/crd-store",
    "/clusters/control-plane/apis/apps/v1/namespaces/vcluster-team-a/statefulsets/team-a",
    APISERVICES,
    f"{APISERVICES}/v1.example.com",
    f"{APISERVICES}/v1alpha1.data.example.com",
    "/clusters/team-a/api/v1/namespaces/kube-system/services/proxy-example-com-v1",
    "/clusters/team-a/api/v1/namespaces/kube-system/services/proxy-data-example-com-v1alpha1",
}

# subcommand -> (text, paths it may read, what each scenario's answer says)
EXPECTED: dict[str, tuple[str, set[str], dict[str, list[str]]]] = {
    "help": ("help", set(), {key: ["`/proxy probe TARGET", "`/proxy silence TARGET"] for key in SCENARIOS}),
    "status": (
        "status",
        {REPLICA_METRICS, *TRIAGE},
        {
            "healthy": ["Status of platform/crd-store", "platform/crd-store: healthy", "Verdict for"],
            "target_down": ["no healthy peers", "requests fail with 503", "target_down: none of the"],
            "relay": ["platform/crd-store: healthy"],
            "masked": ["ownership_masked", "isolation working"],
        },
    ),
    "peers": (
        f"peers {TARGET}",
        {REPLICA_METRICS, *TRIAGE},
        {
            # The verdict, then the peer caches: the findings are `status`'s.
            "healthy": ["Peers of platform/crd-store", "`example.com/v1` on replica team-a-0: healthy 1"],
            "target_down": ["Peers of platform/crd-store", "target_down", "healthy 0, quarantined 1"],
            "relay": ["Peers of platform/crd-store", "`example.com/v1` on replica team-a-0: healthy 1"],
            "masked": ["Peers of platform/crd-store", "`example.com/v1` on replica team-a-0: healthy 1"],
        },
    ),
    "reasons": (
        f"reasons {TARGET} --window 30m",
        {METRICS},
        {
            "healthy": ["no proxy faults", "`upstream`"],
            "target_down": ["proxy-fault reasons", "`all_quarantined`", "fault: proxy path"],
            "relay": ["no proxy faults"],
            "masked": ["`ownership_masked`", "isolation working as intended"],
        },
    ),
    "probe": (
        f"probe {TARGET}",
        {PROBE, METRICS},
        {
            "healthy": ["Probe platform/crd-store: passed", "answers: 200 x1"],
            "target_down": ["failed (unavailable)", "Retry-After: 1", "peers: healthy 0"],
            "relay": ["Probe platform/crd-store: passed"],
            "masked": ["Probe platform/crd-store: passed"],  # lists are never masked
        },
    ),
    "path": (
        f"path {TARGET} --samples 3",
        {PROBE, DIRECT, METRICS, f"{POLICIES}vcluster-team-a/networkpolicies"}
        | {f"{POLICIES}vcluster-crd-store/networkpolicies"}
        | {"/clusters/control-plane/apis/apps/v1/namespaces/vcluster-team-a/statefulsets/team-a"},
        {
            "healthy": ["Path platform/crd-store: likely direct"],
            "target_down": ["Path platform/crd-store:", "evidence, not certainty"],
            "relay": ["Path platform/crd-store: likely relayed", "proxybot netpol --client"],
            "masked": ["Path platform/crd-store: likely direct"],
        },
    ),
    "logs": (
        f"logs {TARGET} --since 30m",
        {CONTROL_PLANE_PODS, f"{CONTROL_PLANE_PODS}/team-a-0/log"},
        {
            "healthy": ["Logs of platform/crd-store: nothing the log reference calls for action"],
            "target_down": [
                "*all peer hosts for the proxy target are quarantined*",
                "*Action:* Incident-grade",
                "placeholder",
            ],
            "relay": ["nothing the log reference calls for action", "Starting proxy server"],
            "masked": ["nothing the log reference calls for action"],
        },
    ),
    "verify": (
        "verify",
        {METRICS, CRONJOB, *(path for path in TRIAGE if not path.endswith("/pods"))},
        {
            key: ["Verify: not fully verified", "*/metrics/syncer readable* (team-a): pass"]
            for key in SCENARIOS
        },
    ),
    "netpol": (
        NETPOL,
        set(),
        {key: ['kubernetes.io/metadata.name: "vcluster-crd-store"'] for key in SCENARIOS},
    ),
    "silence": (
        f"silence {TARGET} 2h --reason target upgrade",
        set(),
        {key: ['Silenced `target="platform/crd-store"`', "reason: target upgrade"] for key in SCENARIOS},
    ),
    "silence list": ("silence list", set(), {key: [f"`{SILENCE_ID}` active"] for key in SCENARIOS}),
    "silence expire": (
        f"silence expire {SILENCE_ID}",
        set(),
        {key: [f"Expired silence `{SILENCE_ID}`"] for key in SCENARIOS},
    ),
}
LONG = {"probe", "path", "verify"}  # say they are working first


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("sub", list(EXPECTED))
async def test_every_subcommand_answers_on_every_scenario(
    request: pytest.FixtureRequest, bots: Any, scenario: str, sub: str
) -> None:
    sim = sim_named(request, scenario)
    silences = FakeSilences(known=[a_silence()])
    bot = await bots(sim, silences)
    text, may_read, expected = EXPECTED[sub]
    mark = len(sim.server.requests)
    answers = await bot.ask(text)
    final = shown(answers[-1])
    for words in expected[scenario]:
        assert words in final, final
    assert answers[-1]["response_type"] == "ephemeral"
    if sub in LONG:  # the note first, then the answer: two of response_url's five uses
        assert len(answers) == 2
        assert answers[0]["text"].endswith("…")
    seen = sim.since(mark)
    assert {method for method, _, _ in seen} <= {"GET"}, "the bot only reads clusters"
    assert {path for _, path, _ in seen} <= may_read
    if sub in ("probe", "path"):
        assert ("GET", PROBE, "limit=1") in seen


async def test_silence_details_reach_alertmanager(healthy: Sim, bots: Any) -> None:
    silences = FakeSilences()
    bot = await bots(healthy, silences)
    await bot.ask(f"silence {TARGET} 90m --reason “target upgrade”", user=ALICE)
    [made] = silences.created
    assert made["matchers"] == (Matcher("target", TARGET),)
    assert made["span"].total_seconds() == 90 * 60
    assert made["by"] == f"someone (Slack {ALICE})"
    assert made["comment"] == "target upgrade"
    await bot.ask(f"silence {TARGET}")
    assert silences.created[-1]["span"].total_seconds() == 3600  # the default: one hour


async def test_expired_or_foreign_silences_are_not_expired(healthy: Sim, bots: Any) -> None:
    other = "0f0e2a1c-8f44-4c31-9e55-2a6f0e1d7c11"
    silences = FakeSilences(known=[a_silence(state="expired"), a_silence("other/target", silence_id=other)])
    bot = await bots(healthy, silences)
    [already] = await bot.ask(f"silence expire {SILENCE_ID}")
    [foreign] = await bot.ask(f"silence expire {other}")
    [listed] = await bot.ask("silence list")
    assert "is already expired" in already["text"]
    assert f"no silence {other} concerns a cluster you may query" in foreign["text"]
    assert "No active or pending silence" in listed["text"]
    assert silences.expired == []


async def test_digest_is_posted_on_demand_and_listed_in_help(healthy: Sim, bots: Any) -> None:
    bot = await bots(healthy, digest=True)
    [help_answer] = await bot.ask("help")
    assert "`/proxy digest`" in shown(help_answer)
    answers = await bot.ask("digest")
    assert answers[0]["text"].startswith("building the fleet digest")
    assert answers[-1]["text"].startswith("Digest posted to `#digest`:")


async def test_digest_without_a_runner_is_refused_and_not_in_help(healthy: Sim, bots: Any) -> None:
    bot = await bots(healthy)
    [help_answer] = await bot.ask("help")
    assert "digest" not in shown(help_answer)
    assert "silence" not in shown(help_answer)  # no Alertmanager configured either
    [answer] = await bot.ask("digest")
    assert "cannot post a digest" in answer["text"]


async def test_public_answers_go_to_the_channel(healthy: Sim, bots: Any) -> None:
    bot = await bots(healthy)
    answers = await bot.ask(f"probe {TARGET}", public=True)
    assert answers[0]["response_type"] == "ephemeral"  # the progress note stays private
    assert answers[-1]["response_type"] == "in_channel"
    assert answers[-1]["replace_original"] is False


# -- who may ask what --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "user", "channel", "refusal"),
    [
        ("status", ALICE, RANDOM, "You may not run `/proxy status` here: `#random` is granted no cluster"),
        (f"probe {TARGET}", ALICE, RANDOM, "You may not run `/proxy probe` here: `#random`"),
        (
            f"probe {TARGET}",
            BOB,
            DM,
            "You may not run `/proxy probe` here: your direct messages are granted no",
        ),
        (f"silence {TARGET}", BOB, OPS, "You may not silence alerts of cluster `team-a`: you are not in"),
        (f"silence expire {SILENCE_ID}", BOB, OPS, "You may not silence alerts of cluster `team-a`: you"),
        ("digest", ALICE, RANDOM, "You may not run `/proxy digest` here"),
    ],
)
async def test_refusals_say_what_and_why_and_are_logged(
    healthy: Sim,
    bots: Any,
    caplog: pytest.LogCaptureFixture,
    text: str,
    user: str,
    channel: str,
    refusal: str,
) -> None:
    caplog.set_level(logging.INFO, logger="handlers.commands")
    silences = FakeSilences(known=[a_silence()])
    bot = await bots(healthy, silences)
    mark = len(healthy.server.requests)
    [answer] = await bot.ask(text, user=user, channel=channel, public=True)
    assert answer["text"].startswith(refusal), answer["text"]
    assert answer["response_type"] == "ephemeral", "a refusal is never shown to the channel"
    assert healthy.since(mark) == []
    assert silences.created == []
    assert silences.expired == []
    assert any("refused /proxy" in r.getMessage() and user in r.getMessage() for r in caplog.records)


async def test_an_unknown_target_gets_the_same_answer_from_every_subcommand(healthy: Sim, bots: Any) -> None:
    bot = await bots(healthy, FakeSilences())
    [probe] = await bot.ask("probe platform/nope")
    [silence] = await bot.ask("silence platform/nope")
    expected = (
        "That command cannot run: TARGET: 'platform/nope' is not a configured target "
        f"(configured: {TARGET}). See `/proxy help`."
    )
    assert probe["text"] == expected
    assert silence["text"] == expected


def test_an_unknown_target_lists_only_the_targets_the_asker_may_query() -> None:
    data = fleet_config(
        clusters=[fleet_cluster("prod"), fleet_cluster("dev")],
        access={"channels": [{"channel": "#ops", "clusters": ["prod"]}]},
    )
    settings = Settings.model_validate(data)
    asker = Asker(Requester(ALICE, "C0OPS0001", "ops"), "alice", "#ops")
    with pytest.raises(
        InputError, match=r"'dev/nope' is not a configured target \(configured: prod/ledger\)$"
    ):
        target_for(settings, asker, "dev/nope")


def test_a_shared_target_is_the_asker_s_through_the_first_client_they_may_query() -> None:
    shared = fleet_target("platform/db")
    data = fleet_config(
        clusters=[
            fleet_cluster("prod", targets=[shared]),
            fleet_cluster("dev", match={"cluster": "dev"}, targets=[shared]),
        ],
        access={"channels": [{"channel": "#ops", "clusters": ["dev"]}]},
    )
    settings = Settings.model_validate(data)
    ops = Asker(Requester(ALICE, "C0OPS0001", "ops"), "alice", "#ops")
    assert target_for(settings, ops, "platform/db").cluster.name == "dev"
    elsewhere = Asker(Requester(ALICE, "C0RANDOM1", "random"), "alice", "#random")
    with pytest.raises(Refused, match="may not query cluster"):
        target_for(settings, elsewhere, "platform/db")


async def test_a_mistyped_target_among_5000_gets_an_answer_slack_takes(
    fake: FakeSlack, store: Store, tmp_path: Path
) -> None:
    # 50 clusters of 100 targets each: the answer names the 10 closest, not all 5 000.
    clusters = [
        fleet_cluster(f"c{c}", targets=[fleet_target(f"team-{c}/svc-{t}") for t in range(100)])
        for c in range(50)
    ]
    data = fleet_config(
        clusters=clusters,
        access={"channels": [{"channel": "#ops", "clusters": ["*"]}]},
        slack={
            "bot_token": BOT_TOKEN,
            "signing_secret": SIGNING_SECRET,
            "api_url": fake.api_url,
            "default_channel": "#alerts",
        },
    )
    settings = Settings.model_validate(data)
    deps = CommandDeps.for_settings(settings, ctx=CheckContext(settings))
    routes, workers = slack_endpoints(
        settings, Deps(settings, store), registrations=[lambda app: commands.register(app, deps)]
    )
    body = command_body(
        "status team-7/svc-42x", fake.response_url("typo"), user=BOB, channel=OPS, channel_name="ops"
    )
    async with asgi(create_app(Deps(settings, store), workers, extra=routes)) as http:
        answer = await http.post("/slack/events", content=body, headers=signed(body))
        assert (answer.status_code, answer.text) == (200, "")
        [reply] = await eventually(lambda: fake.responses, "the answer to a mistyped TARGET", timeout=40)
    await deps.aclose()
    assert fake.refused_responses == []
    assert check_message(reply["text"], reply["blocks"]) is None
    assert len(reply["text"]) <= 1000
    for text in (reply["text"], *iter_texts(reply["blocks"])):
        named = text.split("closest of 5000 configured: ")[1].split(", +4990 more)")[0].split(", ")
        assert named[0] == "team-7/svc-42"
        assert len(named) == 10


async def test_grants_by_alert_channel_and_direct_message_rule(healthy: Sim, bots: Any) -> None:
    bot = await bots(healthy, FakeSilences())
    # #alerts is team-a's alert channel (the default channel); Alice may use DMs for team-a.
    for user, channel in ((BOB, ALERTS), (ALICE, DM)):
        answers = await bot.ask(f"peers {TARGET}", user=user, channel=channel)
        assert "Peers of platform/crd-store" in shown(answers[-1])
    [dm_silence] = await bot.ask(f"silence {TARGET}", user=ALICE, channel=DM)
    assert dm_silence["text"].startswith("Silenced")


async def test_help_lists_only_what_the_asker_may_run(healthy: Sim, bots: Any) -> None:
    bot = await bots(healthy, FakeSilences())
    [alice] = await bot.ask("help", user=ALICE)
    [bob] = await bot.ask("", user=BOB)  # no text at all: help
    [nowhere] = await bot.ask("help", user=ALICE, channel=RANDOM)
    assert "`/proxy silence TARGET" in shown(alice)
    assert "`/proxy probe TARGET" in shown(bob)
    assert "`/proxy logs TARGET [--since 10m]`" in shown(bob)
    assert "silence" not in shown(bob)
    assert "answers nothing in `#random` for you" in shown(nowhere)
    assert "/proxy probe" not in shown(nowhere)


# -- hostile arguments -------------------------------------------------------------------------------------

HOSTILE = [
    "probe ../",
    "probe platform/crd-store/../../api/v1/secrets",
    "probe %2e%2e/crd-store",
    "probe /api/v1/secrets",
    "probe platform/unknown",
    "probe platform/crd\u2010store",  # a Unicode hyphen
    "probe \uff50latform/crd-store",  # a full-width letter
    "probe " + "a" * 300,
    f"probe {TARGET} --gv ../v1",
    f"probe {TARGET} --gv example.com/v1/../../../api/v1/secrets",
    f"probe {TARGET} --gv example.com%2fv1",
    f"probe {TARGET} --gv example.com/v1?watch=1",
    f"probe {TARGET} --gv example.com/v1#x",
    f"probe {TARGET} --gv example.com/v2",
    f"probe {TARGET} --resource ../secrets",
    f"probe {TARGET} --resource %2e%2e",
    f"probe {TARGET} --resource widgets?watch=true",
    f"probe {TARGET} --resource widgets#frag",
    f"probe {TARGET} --resource /api/v1/secrets",
    f'probe {TARGET} --resource "widgets secrets"',
    f"probe {TARGET} --namespace ..",
    f"probe {TARGET} --namespace %2e",
    f"probe {TARGET} --namespace default/../../api/v1/secrets",
    f"probe {TARGET} --namespace default?x=1",
    f"probe {TARGET} --repeat 11",
    f"probe {TARGET} --repeat 1_0",
    f"probe {TARGET} --repeat \u0661",  # an Arabic-Indic digit one
    f"probe {TARGET} --path /api/v1/secrets",
    f"probe {TARGET} extra",
    "status ../",
    "status /api/v1/secrets",
    "peers platform/crd-store?x",
    "peers platform/crd-store#x",
    "reasons %2e%2e",
    f"reasons {TARGET} --window 15m?x",
    f"reasons {TARGET} --window 0s",
    f"path {TARGET} --samples 51",
    f"path {TARGET} --samples -1",
    "path ../../api/v1/secrets",
    "logs ../../api/v1/namespaces/kube-system/secrets",
    f"logs {TARGET} --since 1y",
    f"logs {TARGET} --since 10m?follow=true",
    f"logs {TARGET} --container sidecar",
    "verify --cluster ../x",
    "verify --cluster team-a?x",
    "netpol --client ../x --target a/b",
    "netpol --client a/b --target c/d --cross-cluster 10.0.0.1/8",
    "netpol --client a/b",
    f"silence {TARGET} 5y",
    "silence ../../api/v2/status",
    "silence expire ../../api/v2/status",
    f"silence expire {SILENCE_ID}/../x",
    "bogus",
    "probe &lt;!channel&gt;",
    "x" * 1001,
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
async def test_hostile_arguments_are_refused_before_any_request(healthy: Sim, bots: Any, text: str) -> None:
    silences = FakeSilences(known=[a_silence()])
    bot = await bots(healthy, silences)
    mark = len(healthy.server.requests)
    [answer] = await bot.ask(text)
    assert answer["text"].startswith("That command cannot run: "), answer["text"]
    assert "<!channel>" not in answer["text"]
    assert healthy.since(mark) == [], "nothing reached the cluster"
    assert silences.created == []
    assert silences.expired == []


@pytest.mark.parametrize("headers", [{"secret": "not-the-signing-secret"}, {"skew": -310}, {"skew": 310}])
async def test_bad_signature_and_stale_timestamp_are_401(
    healthy: Sim, bots: Any, fake: FakeSlack, headers: dict[str, Any]
) -> None:
    bot = await bots(healthy)
    mark = len(healthy.server.requests)
    body = command_body(
        f"probe {TARGET}", fake.response_url("k"), user=ALICE, channel=OPS, channel_name="ops"
    )
    answer = await bot.http.post("/slack/events", content=body, headers=signed(body, **headers))
    tampered = await bot.http.post("/slack/events", content=body.replace("ops", "opz"), headers=signed(body))
    assert (answer.status_code, tampered.status_code) == (401, 401)
    await asyncio.sleep(0.2)  # nothing was started that could answer late
    assert fake.responses == []
    assert healthy.since(mark) == []


# -- dependencies failing ----------------------------------------------------------------------------------


def unreachable(sim: Sim, tmp_path: Path) -> dict[str, Any]:
    """Settings changes that point team-a's kubeconfig at a port where nothing listens."""
    cluster = sim.settings.clusters[0]
    doc = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in doc["clusters"]:
        entry["cluster"]["server"] = "https://127.0.0.1:9"
    dead = tmp_path / "dead.yaml"
    dead.write_text(yaml.safe_dump(doc))
    return {"clusters": (cluster.model_copy(update={"kubeconfig": dead}),)}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (f"probe {TARGET}", "the client cluster team-a could not be reached"),
        (f"status {TARGET}", "unavailable"),
        # The path check still weighs the NetworkPolicies, and says why the client side has no samples.
        (f"path {TARGET} --samples 1", "0 answered, 1 failed (cluster team-a: GET"),
    ],
)
async def test_an_unreachable_cluster_is_a_clear_answer(
    healthy: Sim, bots: Any, tmp_path: Path, text: str, says: str
) -> None:
    bot = await bots(healthy, **unreachable(healthy, tmp_path))
    answers = await bot.ask(text)
    assert says in shown(answers[-1]), shown(answers[-1])
    assert "Traceback" not in shown(answers[-1])


async def test_prometheus_down_is_a_clear_answer(healthy: Sim, bots: Any) -> None:
    down = healthy.settings.prometheus.model_copy(update={"url": "http://127.0.0.1:9"})
    bot = await bots(healthy, prometheus=down)
    verify = shown((await bot.ask("verify"))[-1])
    reasons = shown((await bot.ask(f"reasons {TARGET}"))[-1])
    assert "Verify: monitoring is not working" in verify or "not fully verified" in verify
    assert "Prometheus" in verify
    assert "127.0.0.1:9" in verify
    assert "Prometheus could not be read" in reasons
    assert "no proxy faults" in reasons  # the totals still answer


async def test_alertmanager_refusing_is_a_clear_answer(healthy: Sim, bots: Any) -> None:
    error = UpstreamError("Alertmanager at http://am:9093 failed creating a silence: HTTP 400: bad matcher")
    bot = await bots(healthy, FakeSilences(error=error))
    [made] = await bot.ask(f"silence {TARGET}")
    [listed] = await bot.ask("silence list")
    assert made["text"] == f"`/proxy silence` failed: {error}"
    assert "failed creating a silence" in made["text"]
    assert listed["text"].startswith("`/proxy silence` failed: Alertmanager at")


async def test_the_ack_does_not_wait_for_the_work(healthy: Sim, bots: Any, fake: FakeSlack) -> None:
    gate = asyncio.Event()
    bot = await bots(healthy, FakeSilences(gate=gate, known=[a_silence()]))
    body = command_body(
        "silence list", fake.response_url("slow"), user=ALICE, channel=OPS, channel_name="ops"
    )
    answer = await bot.http.post("/slack/events", content=body, headers=signed(body))
    assert (answer.status_code, answer.text) == (200, "")
    assert fake.responses == [], "acked while Alertmanager has not answered yet"
    gate.set()
    [listed] = await eventually(lambda: fake.responses, "the answer once Alertmanager answered")
    assert SILENCE_ID in shown(listed)


# -- the alert buttons, on the real checks ---------------------------------------------------------------

MESSAGE_TS = "1700000001.000100"
GROUP_KEY = '{}:{alertname="ResourceProxyNoHealthyPeers", target="platform/crd-store"}'


@pytest.mark.parametrize(
    ("scenario", "action", "says"),
    [
        ("healthy", ACTION_PROBE, "Probe platform/crd-store: passed"),
        ("target_down", ACTION_PROBE, "Probe platform/crd-store: failed (unavailable)"),
        ("healthy", ACTION_PATH, "Path platform/crd-store: likely direct"),
        ("relay", ACTION_PATH, "Path platform/crd-store: likely relayed"),
    ],
)
async def test_buttons_run_the_real_checks_and_answer_in_the_thread(
    request: pytest.FixtureRequest, bots: Any, fake: FakeSlack, scenario: str, action: str, says: str
) -> None:
    sim = sim_named(request, scenario)
    bot = await bots(sim)
    assert fake.seed_message(ALERTS, "FIRING: ResourceProxyNoHealthyPeers", ts=MESSAGE_TS).ts == MESSAGE_TS
    group = AlertGroupState("#alerts", GROUP_KEY, AlertStatus.FIRING, MESSAGE_TS, channel_id=ALERTS)
    await bot.store.save_group(group)  # as the bot keeps the alert message it posted
    value = ActionRef.for_group("team-a", TARGET, GROUP_KEY).encode()
    body = button_body(
        action,
        value,
        fake.response_url("b"),
        user=BOB,
        channel=ALERTS,
        channel_name="alerts",
        message_ts=MESSAGE_TS,
    )
    answer = await bot.http.post("/slack/events", content=body, headers=signed(body))
    assert (answer.status_code, answer.text) == (200, "")
    [reply] = await eventually(lambda: fake.thread(ALERTS, MESSAGE_TS), "the thread reply", timeout=40)
    assert reply.text.startswith(says)
    [note] = fake.responses  # "Probing …" / "Checking the path to …", to the person who pressed
    assert note["response_type"] == "ephemeral"


# -- Socket Mode: the same registration ------------------------------------------------------------------


async def test_socket_mode_answers_the_same_command(healthy: Sim, store: Store) -> None:
    slack = SocketSlack()
    runner = await slack.serve()
    app_token = "xapp-1-A0TEST-123-socketsecret"
    socket_slack = healthy.settings.slack.model_copy(
        update={
            "api_url": f"{slack.base_url}/api/",
            "app_token": SecretStr(app_token),
            "signing_secret": None,
        }
    )
    settings = healthy.settings.model_copy(update={"slack": socket_slack})
    deps = CommandDeps.for_settings(settings, ctx=CheckContext(settings))
    routes, workers = slack_endpoints(
        settings, Deps(settings, store), registrations=[lambda app: commands.register(app, deps)]
    )
    assert routes == []
    tasks = [asyncio.create_task(work()) for work in workers]
    try:
        await asyncio.wait_for(slack.connected.wait(), timeout=10)
        body = command_body(
            f"peers {TARGET}", f"{slack.base_url}/response/k1", user=BOB, channel=OPS, channel_name="ops"
        )
        assert slack.socket is not None
        await slack.socket.send_json(
            {
                "envelope_id": "env-1",
                "type": "slash_commands",
                "payload": dict(parse_qsl(body)),
                "accepts_response_payload": True,
            }
        )
        ack = await asyncio.wait_for(slack.acks.get(), timeout=10)
        assert ack["envelope_id"] == "env-1"
        [answer] = await eventually(lambda: slack.responses, "the answer over response_url")
        assert "Peers of platform/crd-store" in shown(dict(answer))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await runner.cleanup()
        await deps.aclose()


# -- response_url: five answers within 30 minutes ----------------------------------------------------------


async def test_an_answer_slack_refuses_on_a_used_up_response_url_is_logged(
    healthy: Sim, bots: Any, caplog: pytest.LogCaptureFixture
) -> None:
    bot = await bots(healthy)
    url = bot.fake.response_url("used-up")
    async with httpx.AsyncClient(timeout=5) as earlier:
        for n in range(5):  # five answers already went through this response_url
            assert (await earlier.post(url, json={"text": f"earlier answer {n}"})).status_code == 200
    caplog.set_level(logging.ERROR, logger="handlers.respond")
    body = command_body("help", url, user=ALICE, channel=OPS, channel_name="ops")
    answer = await bot.http.post("/slack/events", content=body, headers=signed(body))
    assert (answer.status_code, answer.text) == (200, "")
    refusal = await eventually(lambda: bot.fake.refused_responses, "Slack's refusal of the sixth use")
    assert refusal == [("used-up", "used_url")]
    logged = await eventually(
        lambda: [r.getMessage() for r in caplog.records if "used_url" in r.getMessage()], "the log line"
    )
    assert "HTTP 404 used_url" in logged[0]
    assert "/proxy" in logged[0]  # what the person did not get is named
