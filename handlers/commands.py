"""`/proxy <sub> [args]`: the slash command, acknowledged at once and answered through `response_url`.

The ack listener only acks (an empty 200, within milliseconds); everything else runs afterwards as a bolt
lazy listener, so neither a hung cluster nor an alert storm delays an ack. Flow of one command:

    parse (command_args) -> authorize + validate (a `CommandPlan`) -> [progress note] -> check -> answer

Authorization comes from `access` alone (`Settings.may_query` / `may_silence`): a channel may query the
clusters it is granted (and a cluster's alert channel that cluster); a direct message follows
`access.direct_messages` — only the users listed there, only for the clusters listed there, nobody by
default. Silencing also needs `access.silencers`. Every subcommand but `help` needs a grant; `status` and
`verify` without arguments cover only the clusters the asker may query, and `digest` (the whole fleet)
needs every cluster. Refusals say what and why, go only to the asker, and are logged.

Arguments are validated by the checks' own validators before any request, and TARGET must be a
configured target, so nothing typed can reach an API path other than the probe path it names. Answers
are ephemeral unless `public` is given; a failure is a sentence, never a stack trace, never silence.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from bot.checks.netpol import cross_cluster, netpol, parse_endpoint
from bot.checks.path import DEFAULT_SAMPLES, check_path, check_samples
from bot.checks.probe import ProbeRequest, check_repeat, probe_request
from bot.checks.probe_run import run_probe
from bot.checks.status import parse_window, run_reasons, run_status
from bot.checks.verify import check_verify, chosen_clusters
from bot.clients.prometheus import PrometheusClient
from bot.digest.runner import BuiltDigest
from bot.domain.status_result import StatusResult
from bot.errors import InputError, Refused
from bot.fleet.derive import Fleet
from bot.fleet.report import fleet_report
from bot.ports import Silences
from bot.reads.context import CheckContext, TargetRef
from bot.render.blocks import Message, code, text_message
from bot.render.checks_netpol import netpol_message
from bot.render.checks_path import path_message
from bot.render.checks_probe import probe_message
from bot.render.checks_status import peers_message, reasons_message, status_message
from bot.render.checks_verify import verify_message
from bot.render.fleet import fleet_message
from bot.render.help import help_message
from bot.subcommands import SLASH, Access
from config.clusters import ClusterSettings, TargetSettings
from config.settings import Settings
from handlers.acknowledge import Acknowledger, plan_ack
from handlers.actions import ButtonChecks
from handlers.command_access import (
    Asker,
    allowed_subcommands,
    granted,
    query_refusal,
    queryable,
    target_for,
)
from handlers.command_args import Invocation, check_required, parse_invocation, whole_number
from handlers.respond import Asked, answering, say
from handlers.silence import plan_silence

log = logging.getLogger(__name__)

COMMAND = "/proxy"
PROGRESS_AFTER = 1.0  # quick reads say "reading …" only when they turn out slow
BUTTON_PATH_SAMPLES = 5
DigestNow = Callable[[], Awaitable[BuiltDigest]]
Work = Callable[[], Awaitable[Message]]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class CommandDeps:
    """What `/proxy` uses; `ctx` lives as long as the bot (`aclose()` it at shutdown)."""

    settings: Settings
    ctx: CheckContext
    silences: Silences | None = None  # None: `alertmanager.url` is not configured
    digest: DigestNow | None = None  # None: no digest runner in this bot
    prometheus: PrometheusClient | None = None  # the bot's one client; None: `prometheus.url` not set
    acks: Acknowledger | None = None  # `ack` / `unack`; None: no outbox to edit messages through
    path_dial_window: float = 3.0
    now: Callable[[], datetime] = _utc_now
    # The fleet as this bot read it (None: the configuration's clients, `clusters:`).
    fleet: Callable[[], Fleet | None] = lambda: None
    # Told (subcommand, seconds from arrival to answer) after each command: the bot's own metrics.
    observe: Callable[[str, float], None] = lambda sub, seconds: None

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        *,
        ctx: CheckContext,
        silences: Silences | None = None,
        digest: DigestNow | None = None,
        prometheus: PrometheusClient | None = None,
    ) -> CommandDeps:
        """The commands' dependencies over `ctx` (the bot's shared readers and live state)."""
        return cls(settings, ctx, silences, digest, prometheus)

    async def aclose(self) -> None:
        """Close what the context opened itself; the shared clients belong to the bot (`bot.compose`)."""
        await self.ctx.aclose()


@dataclass(frozen=True)
class CommandPlan:
    """A validated, authorized command: its work, and the note to give first when it takes long."""

    work: Work
    progress: str | None = None
    at_once: bool = False  # give the note before starting (work known to take seconds)


def register(app: AsyncApp, deps: CommandDeps) -> None:
    """Add `/proxy` to `app` (HTTP and Socket Mode alike): ack at once, the work as a lazy listener."""
    app.command(COMMAND)(ack=_ack, lazy=[_listener(deps)])


async def _ack(ack: AsyncAck) -> None:
    await ack()


def _listener(deps: CommandDeps) -> Callable[..., Awaitable[None]]:
    async def answer_proxy_command(body: dict[str, Any], respond: AsyncRespond) -> None:
        await answer(deps, body, respond)

    return answer_proxy_command


async def answer(deps: CommandDeps, body: Mapping[str, Any], respond: AsyncRespond) -> None:
    """Run one `/proxy` command; every way it can end is answered to the person who typed it."""
    started = time.monotonic()
    asker = Asker.from_body(body)
    text = str(body.get("text") or "")
    logged = f"{COMMAND} {text[:200]!r} by {asker.who.user} in {asker.where}"
    asked = Asked(f"`{COMMAND} command`", logged, "That command cannot run: {}. See `/proxy help`.", log)
    sub = "command"

    async def work() -> None:
        nonlocal sub
        invocation = parse_invocation(text)
        sub = invocation.sub
        asked.name = f"`{COMMAND} {sub}`"
        result = await _run(plan_for(deps, invocation, asker), respond)
        await say(respond, result, public=invocation.public)

    try:
        await answering(respond, asked, work)
    finally:
        deps.observe(sub, time.monotonic() - started)


async def _run(plan: CommandPlan, respond: AsyncRespond) -> Message:
    if plan.progress is None:
        return await plan.work()
    if plan.at_once:
        await say(respond, text_message(plan.progress))
        return await plan.work()
    task = asyncio.ensure_future(plan.work())
    done, _ = await asyncio.wait({task}, timeout=PROGRESS_AFTER)
    if not done:
        await say(respond, text_message(plan.progress))
    return await task


# -- authorization ----------------------------------------------------------------------------------
def _target_arg(inv: Invocation) -> str:
    name = inv.arg(0)
    if name is None:  # parse_invocation guarantees it for subcommands that need one
        raise InputError(f"{inv.sub}: TARGET is missing")
    return name


# -- plans per subcommand ---------------------------------------------------------------------------


def plan_for(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    """Validate and authorize one command (no request made yet); Refused or InputError say why not."""
    if SLASH[inv.sub].access is not Access.ANYONE:
        granted(deps.settings, asker, inv.sub)
    check_required(inv)
    return PLANNERS.get(inv.sub, _plan_checked)(deps, inv, asker)


def _plan_help(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    allowed = allowed_subcommands(
        deps.settings, asker.who, silences=deps.silences is not None, digest=deps.digest is not None
    )
    focus = inv.arg(0)
    message = help_message(allowed, channel=asker.place, focus=focus.lower() if focus else None)

    async def work() -> Message:
        return message

    return CommandPlan(work)


def _plan_status(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    name = inv.arg(0)
    targets: tuple[str, ...] | None = None
    clusters = queryable(deps.settings, asker.who)
    if name is not None:
        ref = target_for(deps.settings, asker, name)
        targets, what = (ref.name,), ref.name
    else:
        targets = None if clusters == deps.settings.clusters else _names(clusters)
        what = "every target"
    # A shared target is read through every client behind it that the asker may query, no other.
    through = None if clusters == deps.settings.clusters else tuple(c.name for c in clusters)

    shown = peers_message if inv.sub == "peers" else status_message

    async def work() -> Message:
        return shown(await _status(deps.ctx, targets, through), deps.now())

    return CommandPlan(work, f"reading the live state of {what}…")


def _names(clusters: tuple[ClusterSettings, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t.name for c in clusters for t in c.targets))  # a shared target once


async def _status(
    ctx: CheckContext, targets: tuple[str, ...] | None, clusters: tuple[str, ...] | None = None
) -> StatusResult:
    """Every configured target (None), or only these: the ones the asker may query, through the clients
    they may query (`clusters`; None: every one)."""
    if targets is None:
        return await run_status(ctx)
    results = [await run_status(ctx, name, clusters) for name in targets]
    reads = {read.cluster: read for result in results for read in result.reads}
    return StatusResult(tuple(t for result in results for t in result.targets), tuple(reads.values()))


def _plan_reasons(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    ref = target_for(deps.settings, asker, _target_arg(inv))
    window = parse_window(inv.one("--window") or "15m")

    async def work() -> Message:
        result = await run_reasons(deps.ctx, ref.name, window=window, prometheus=deps.prometheus)
        return reasons_message(result)

    return CommandPlan(work, f"reading the reasons of {ref.name}…")


def _plan_probe(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    ref = target_for(deps.settings, asker, _target_arg(inv))
    request = probe_request(
        deps.settings,
        ref.name,
        group_version=inv.one("--gv"),
        resource=inv.one("--resource"),
        namespace=inv.one("--namespace"),
    )
    repeat = check_repeat(whole_number("--repeat", inv.one("--repeat") or "1"))
    times = "" if repeat == 1 else f" {repeat} times"
    return CommandPlan(lambda: _probe(deps, request, repeat), f"probing {ref.name}{times}…", at_once=True)


async def _probe(deps: CommandDeps, request: ProbeRequest, repeat: int) -> Message:
    return probe_message(await run_probe(deps.ctx, request, repeat=repeat))


def _plan_path(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    ref = target_for(deps.settings, asker, _target_arg(inv))
    samples = check_samples(whole_number("--samples", inv.one("--samples") or str(DEFAULT_SAMPLES)))
    note = f"checking the path to {ref.name} ({samples} samples each way, dial latency, NetworkPolicies)…"
    return CommandPlan(lambda: _path(deps, ref, samples), note, at_once=True)


async def _path(deps: CommandDeps, ref: TargetRef, samples: int) -> Message:
    result = await check_path(deps.ctx, ref, samples=samples, dial_window=deps.path_dial_window)
    return path_message(result)


def _plan_checked(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    """A check on one TARGET that the subcommand table names (`Slash.check`, `.view`): no planner of its
    own. The target is the asker's to query; the check gets the options by name and refuses bad ones now."""
    slash = SLASH[inv.sub]
    check, view = slash.check, slash.view
    if check is None or view is None:  # a subcommand with neither a planner nor a check: the table's fault
        raise Refused(f"`/proxy {inv.sub}` has no way to run in this bot.")
    ref = target_for(deps.settings, asker, _target_arg(inv))
    options = {name.removeprefix("--").replace("-", "_"): inv.one(name) for name in slash.grammar.options}
    checking = named(check)(deps.ctx, ref, **options)
    laid_out = named(view)

    async def work() -> Message:
        message: Message = laid_out(await checking)
        return message

    return CommandPlan(work, slash.progress.format(target=ref.name, cluster=ref.cluster.name) or None)


def named(where: str) -> Any:
    """The function `module:function` names (a subcommand table entry's check or view)."""
    module, _, function = where.partition(":")
    return getattr(importlib.import_module(module), function)


def _plan_verify(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    clusters = chosen_clusters(deps.settings, inv.one("--cluster"))
    refused = next((c for c in clusters if not deps.settings.may_query(c.name, asker.who)), None)
    if refused is not None and inv.one("--cluster") is not None:
        raise query_refusal(refused.name, asker)
    clusters = tuple(c for c in clusters if deps.settings.may_query(c.name, asker.who))

    async def work() -> Message:
        return verify_message(await check_verify(deps.ctx, deps.prometheus, clusters=clusters))

    note = "verifying the monitoring (Prometheus, probe CronJobs, /metrics/syncer)…"
    return CommandPlan(work, note, at_once=True)


def _plan_netpol(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    # --client and --target are required by the grammar: plan_for has refused a command without them.
    client = parse_endpoint("--client", inv.one("--client") or "")
    target = parse_endpoint("--target", inv.one("--target") or "")
    cross = cross_cluster(inv.many("--cross-cluster"), inv.many("--stun"), inv.many("--stun-port"))
    message = netpol_message(netpol(client, target, cross))

    async def work() -> Message:
        return message

    return CommandPlan(work)


def _plan_silence(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    return CommandPlan(plan_silence(deps.settings, deps.silences, inv, asker.who, asker.user_name, deps.now))


def _plan_ack(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    """`ack|unack TARGET`: the press is named by its moment, so a repeated command is a new press."""
    press = f"command:{deps.now().timestamp():.6f}"
    return CommandPlan(plan_ack(deps.settings, deps.acks, inv, asker, press))


def _plan_fleet(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    granted(deps.settings, asker, inv.sub)
    fleet = deps.fleet()
    names = [c.name for c in fleet.clients] if fleet is not None else [c.name for c in deps.settings.clusters]
    shown = [name for name in names if deps.settings.may_query(name, asker.who)]
    report = fleet_report(deps.settings, fleet, shown)

    async def work() -> Message:
        return fleet_message(report)

    return CommandPlan(work)


def _plan_digest(deps: CommandDeps, inv: Invocation, asker: Asker) -> CommandPlan:
    clusters = granted(deps.settings, asker, inv.sub)
    digest = deps.digest
    if digest is None:
        raise Refused("proxybot cannot post a digest here: its digest runner is not part of this bot.")
    if len(clusters) != len(deps.settings.clusters):
        raise Refused(
            "You may not post the fleet digest from here: it covers every cluster, and "
            f"{asker.place} may not query all of them (see `access` in the configuration)."
        )
    channel = deps.settings.digest_channel() or "the digest channel"

    async def work() -> Message:
        built = await digest()
        return text_message(f"Digest posted to {code(channel)}: {built.message.text}")

    return CommandPlan(work, "building the fleet digest (reading every cluster)…", at_once=True)


# One planner per `/proxy` subcommand of bot/subcommands.py (tests/bot/test_subcommands.py checks both ways).
PLANNERS: dict[str, Callable[[CommandDeps, Invocation, Asker], CommandPlan]] = {
    "help": _plan_help,
    "status": _plan_status,
    "peers": _plan_status,
    "reasons": _plan_reasons,
    "probe": _plan_probe,
    "path": _plan_path,
    "verify": _plan_verify,
    "netpol": _plan_netpol,
    "ack": _plan_ack,
    "unack": _plan_ack,
    "silence": _plan_silence,
    "fleet": _plan_fleet,
    "digest": _plan_digest,
}


# -- the alert buttons ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ButtonRuns:
    deps: CommandDeps
    samples: int = field(default=BUTTON_PATH_SAMPLES)

    async def probe(self, cluster: ClusterSettings, target: TargetSettings) -> Message:
        probe = target.probe
        request = ProbeRequest(
            TargetRef(cluster, target), probe.group_version, probe.resource, probe.namespace
        )
        return await _probe(self.deps, request, 1)

    async def path(self, cluster: ClusterSettings, target: TargetSettings) -> Message:
        return await _path(self.deps, TargetRef(cluster, target), self.samples)


def button_checks(deps: CommandDeps, *, path_samples: int = BUTTON_PATH_SAMPLES) -> ButtonChecks:
    """*Probe now* and *Path check* on alert messages: the same probe and path check as the commands."""
    runs = _ButtonRuns(deps, check_samples(path_samples))
    return ButtonChecks(probe=runs.probe, path=runs.path)
