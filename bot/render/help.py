"""`/proxy help`: usage with examples, listing only the subcommands the person asking may run here."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from bot.render.blocks import Block, Message, code, context, esc, header, message, section


@dataclass(frozen=True, slots=True)
class SubcommandHelp:
    """One subcommand: its usage line, what it does, and an example."""

    usage: str
    does: str
    example: str


HELP: dict[str, SubcommandHelp] = {
    "status": SubcommandHelp(
        "status [TARGET]",
        "the quick-triage verdict per target (is the target down or the proxy degraded?), live proxy "
        "state per group/version, the diagnosis, the proxy's APIServices and the vCluster versions",
        "status platform/crd-store",
    ),
    "peers": SubcommandHelp(
        "peers TARGET", "the peer caches of one target per group/version", "peers platform/crd-store"
    ),
    "reasons": SubcommandHelp(
        "reasons TARGET [--window 15m]",
        "outcome reasons (request, termination, dial failure, discovery fallback) with their meaning",
        "reasons platform/crd-store --window 1h",
    ),
    "probe": SubcommandHelp(
        "probe TARGET [--gv G/V] [--resource R] [--namespace N] [--repeat N]",
        "the guide's synthetic probe: GET /apis/<gv>/namespaces/<ns>/<resource>?limit=1 through the client",
        "probe platform/crd-store --repeat 3",
    ),
    "path": SubcommandHelp(
        "path TARGET [--samples N]",
        "direct or relayed? latency floor, dial step and both ends' NetworkPolicies",
        "path platform/crd-store --samples 5",
    ),
    "logs": SubcommandHelp(
        "logs TARGET [--since 10m]",
        "the client control plane's log lines the vendor's log reference explains, per pod, with what to do",
        "logs platform/crd-store --since 30m",
    ),
    "verify": SubcommandHelp(
        "verify [--cluster NAME]",
        "is the monitoring working: scrape up, rules loaded, probe CronJob succeeding, metrics readable, "
        "APIServices Available (no orphans), vCluster versions",
        "verify",
    ),
    "netpol": SubcommandHelp(
        "netpol --client NS/RELEASE --target NS/RELEASE [--cross-cluster CIDR...]",
        "the vcluster.yaml NetworkPolicy values for both ends of a direct path",
        "netpol --client vcluster-team-a/team-a --target vcluster-crd-store/crd-store",
    ),
    "ack": SubcommandHelp(
        "ack TARGET",
        'acknowledge the firing alerts about TARGET posted in this channel ("I have it", shown on them)',
        "ack platform/crd-store",
    ),
    "unack": SubcommandHelp(
        "unack TARGET",
        "remove the acknowledgement of the firing alerts about TARGET posted in this channel",
        "unack platform/crd-store",
    ),
    "silence": SubcommandHelp(
        "silence TARGET [DURATION] [--reason TEXT] · silence list · silence expire ID",
        "Alertmanager silences for one target's alerts (default 1h)",
        "silence platform/crd-store 2h --reason target upgrade",
    ),
    "digest": SubcommandHelp("digest", "post the fleet health digest now", "digest"),
}


def _entry(name: str) -> str:
    item = HELP[name]
    return f"{code('/proxy ' + item.usage)}\n{esc(item.does)} — e.g. {code('/proxy ' + item.example)}"


def help_message(allowed: Collection[str], *, channel: str, focus: str | None = None) -> Message:
    """Usage of the subcommands in `allowed` (in the usual order); `focus` shows just that one.

    `channel` names where they asked, as mrkdwn (made by the caller, `Asker.place`)."""
    names = [name for name in HELP if name in allowed]
    if focus is not None and focus in names:
        names = [focus]
    if not names:
        text = (
            f"proxybot answers nothing in {channel} for you: this place is not granted any cluster. "
            "An operator can add it under `access` in proxybot's configuration."
        )
        return message("proxybot: nothing you may run here", [section(text)])
    body: list[Block] = [header("/proxy: what you may run here")]
    body += [section(_entry(name)) for name in names]
    notes = [
        "Answers are visible only to you; add `public` to show one to the channel.",
        "TARGET is a configured target, `&lt;project&gt;/&lt;name&gt;`.",
    ]
    return message("/proxy: " + ", ".join(names), body, [context(notes)])
