"""Every subcommand of both front ends in one table: `/proxy NAME` (handlers/commands.py) and `proxybot NAME`
(bot/cli/).

One `SubcommandSpec` per name gives what the front ends derive from it: the grammar (`Usage`: positionals
and `Option`s), which both the `/proxy` parser (handlers/command_args.py) and the console command's
arguments (bot/cli/output.py's `from_grammar`) read; its help entry (bot/render/help.py) and the Slack
manifests' usage hint (`Usage.hint`); who may run it (`Access`, handlers/command_access.py);
and the console command (`cli`: the bot/cli module whose `CONSOLE_COMMANDS` holds it, imported only when
that command runs). The `/proxy` planners are keyed by these names in handlers/commands.py;
tests/bot/test_subcommands.py fails when a front end lacks one.

Only the standard library is imported here: `proxybot --help` reads this table and nothing else. So a
console help text that names a check's limit says `{NAME}`, and the console command gives the value
(`from_grammar(NAME, LIMIT=...)` in its bot/cli module).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum


class Takes(Enum):
    """How many values an option takes."""

    ONE = "one"  # --gv G/V (once)
    REPEATED = "repeated"  # --stun CIDR, may be given several times
    SEVERAL = "several"  # --cross-cluster CIDR [CIDR ...]: every following word up to the next option
    WORDS = "words"  # --reason some free text: the following words joined by spaces


@dataclass(frozen=True)
class Option:
    """One option of a grammar: how many values it takes, and how the console shows and reads it."""

    takes: Takes
    metavar: str | None = None  # None: argparse's (the name in capitals)
    help: str = ""  # the console's help line; `{NAME}` is a fact the console command gives
    default: str | None = None  # the console's default, read as if typed (`{NAME}` too)
    number: bool = False  # the console reads a whole number (`/proxy`: the planner's whole_number)
    required: bool = False  # `/proxy` asks for it once the asker may run the command (check_required)


# The console's help of a positional, unless the grammar says otherwise (`Usage.about`).
ABOUT = {"TARGET": "a configured target, <project>/<name>"}


@dataclass(frozen=True)
class Usage:
    """One subcommand's grammar: positional names (`?` suffix: optional) and options."""

    positionals: tuple[str, ...] = ()
    options: Mapping[str, Option] = field(default_factory=dict)
    about: Mapping[str, str] = field(default_factory=dict)  # a positional's console help, by name

    @property
    def required(self) -> int:
        return sum(1 for p in self.positionals if not p.endswith("?"))

    def hint(self) -> str:
        """The positionals as a usage hint shows them: `TARGET [DURATION]` (each one's first form)."""
        words = [p.rstrip("?").split("|")[0] for p in self.positionals]
        return " ".join(
            f"[{w}]" if p.endswith("?") else w for p, w in zip(self.positionals, words, strict=True)
        )


class Access(Enum):
    """Who may run a `/proxy` subcommand from where (`access` in the configuration)."""

    ANYONE = "anyone"  # help: lists what the asker may run
    QUERY = "query"  # a place granted at least one cluster
    SILENCE = "silence"  # also a silencer of a granted cluster, and Alertmanager configured
    FLEET = "fleet"  # a place granted every cluster, and a digest runner in this bot


@dataclass(frozen=True)
class Slash:
    """`/proxy NAME`: its grammar, its help entry (usage line, what it does, an example) and its access."""

    grammar: Usage
    usage: str
    does: str
    example: str
    access: Access = Access.QUERY
    # A check on one TARGET needs no planner of its own: `check` ("module:function") is called with the
    # check context, the target and the options by name (`--since` as `since`, a string or None), validates
    # them at once (bad input is refused before anything is read) and returns what to await; `view`
    # ("module:function") lays its result out; `progress` is the note given when it is slow ({target},
    # {cluster}). Without them, the subcommand's planner is in handlers/commands.py's PLANNERS.
    check: str | None = None
    view: str | None = None
    progress: str = ""


@dataclass(frozen=True)
class SubcommandSpec:
    """One subcommand: `/proxy NAME` (`slash`), `proxybot NAME` (`cli`: its module), or both."""

    name: str
    slash: Slash | None = None
    cli: str | None = None  # the bot/cli module whose CONSOLE_COMMANDS holds `proxybot NAME`
    cli_help: str = ""  # `proxybot --help`'s line (default: the slash help's `does`)

    @property
    def console_help(self) -> str:
        return self.cli_help or (self.slash.does if self.slash else "")


_TARGET = ("TARGET",)
_STATUS = "the quick-triage verdict per target (is the target down or the proxy degraded?), live proxy "
_STATUS += "state per group/version, the diagnosis, the proxy's APIServices and the vCluster versions"
_PROBE = "the guide's synthetic probe: GET /apis/<gv>/namespaces/<ns>/<resource>?limit=1 through the client"
_WINDOW = "window for Prometheus' increase() (default 15m); without prometheus.url the counts are totals "
_WINDOW += "since the proxy started"
_CROSS_CLUSTER = "the ends are on different control plane clusters: CIDRs of the peers' advertised endpoints"

SUBCOMMANDS: tuple[SubcommandSpec, ...] = (
    SubcommandSpec(
        "help",
        # Not listed in its own answer (no usage line): help is what lists the others.
        Slash(Usage(("SUBCOMMAND?",)), "", "", "", Access.ANYONE),
    ),
    SubcommandSpec(
        "status",
        Slash(
            Usage(("TARGET?",), about={"TARGET": "one configured target (default: all)"}),
            "status [TARGET]",
            _STATUS,
            "status platform/crd-store",
        ),
        cli="bot.cli.status",
    ),
    SubcommandSpec(
        "peers",
        Slash(
            Usage(_TARGET),
            "peers TARGET",
            "the peer caches of one target per group/version",
            "peers platform/crd-store",
        ),
        cli="bot.cli.status",
    ),
    SubcommandSpec(
        "reasons",
        Slash(
            Usage(_TARGET, {"--window": Option(Takes.ONE, help=_WINDOW, default="15m")}),
            "reasons TARGET [--window 15m]",
            "outcome reasons (request, termination, dial failure, discovery fallback) with their meaning",
            "reasons platform/crd-store --window 1h",
        ),
        cli="bot.cli.status",
        cli_help="outcome-reason breakdown of one target with each reason's meaning",
    ),
    SubcommandSpec(
        "probe",
        Slash(
            Usage(
                _TARGET,
                {
                    "--gv": Option(Takes.ONE, "G/V", "group/version (one of the target's group_versions)"),
                    "--resource": Option(
                        Takes.ONE, "R", "plural resource name (default: the target's probe)"
                    ),
                    "--namespace": Option(Takes.ONE, "N", "namespace (default: the target's probe)"),
                    "--repeat": Option(
                        Takes.ONE,
                        "N",
                        "requests in a series, 1-{MAX_REPEAT} (default 1)",
                        default="1",
                        number=True,
                    ),
                },
            ),
            "probe TARGET [--gv G/V] [--resource R] [--namespace N] [--repeat N]",
            _PROBE,
            "probe platform/crd-store --repeat 3",
        ),
        cli="bot.cli.probe",
        cli_help="the guide's synthetic probe: GET /apis/<gv>/namespaces/<ns>/<resource>?limit=1 via the "
        "client",
    ),
    SubcommandSpec(
        "path",
        Slash(
            Usage(
                _TARGET,
                {
                    "--samples": Option(
                        Takes.ONE,
                        "N",
                        "requests on each side, 1-{MAX_SAMPLES} (default {DEFAULT_SAMPLES})",
                        default="{DEFAULT_SAMPLES}",
                        number=True,
                    )
                },
            ),
            "path TARGET [--samples N]",
            "direct or relayed? latency floor, dial step and both ends' NetworkPolicies",
            "path platform/crd-store --samples 5",
        ),
        cli="bot.cli.path",
        cli_help="direct-vs-relay evidence (latency floor, dial step) and the NetworkPolicy check of both "
        "ends",
    ),
    SubcommandSpec(
        "logs",
        Slash(
            Usage(
                _TARGET,
                {
                    "--since": Option(
                        Takes.ONE,
                        "D",
                        "the lines of the last D (e.g. 10m, 1h; at most {SINCE_MAX_LINES} per pod) instead "
                        "of the last {TAIL_LINES}",
                    )
                },
            ),
            "logs TARGET [--since 10m]",
            "the client control plane's log lines the vendor's log reference explains, per pod, with what "
            "to do",
            "logs platform/crd-store --since 30m",
            check="bot.checks.logs:logs_check",
            view="bot.render.checks_logs:logs_message",
            progress="reading the control-plane logs of {cluster}…",
        ),
        cli="bot.cli.logs",
        cli_help="the client control plane's log lines that the vendor's log reference explains, per pod",
    ),
    SubcommandSpec(
        "verify",
        Slash(
            Usage(
                (),
                {
                    "--cluster": Option(
                        Takes.ONE, "NAME", "verify one configured client cluster (default: all)"
                    )
                },
            ),
            "verify [--cluster NAME]",
            "is the monitoring working: scrape up, rules loaded, probe CronJob succeeding, metrics readable, "
            "APIServices Available (no orphans), vCluster versions",
            "verify",
        ),
        cli="bot.cli.verify",
        cli_help="verify the monitoring: scrape up, rules loaded, probe CronJob succeeding, metrics readable",
    ),
    SubcommandSpec(
        "netpol",
        Slash(
            Usage(
                (),
                {
                    "--client": Option(Takes.ONE, "NS/RELEASE", "the client's control plane", required=True),
                    "--target": Option(Takes.ONE, "NS/RELEASE", "the target's control plane", required=True),
                    "--cross-cluster": Option(Takes.SEVERAL, "CIDR", _CROSS_CLUSTER),
                    "--stun": Option(Takes.REPEATED, "CIDR", "STUN endpoint CIDR (default {ANYWHERE_V4})"),
                    "--stun-port": Option(
                        Takes.REPEATED, "PORT", "STUN UDP port (default {DEFAULT_STUN_PORT})"
                    ),
                },
            ),
            "netpol --client NS/RELEASE --target NS/RELEASE [--cross-cluster CIDR...]",
            "the vcluster.yaml NetworkPolicy values for both ends of a direct path",
            "netpol --client vcluster-team-a/team-a --target vcluster-crd-store/crd-store",
        ),
        cli="bot.cli.netpol",
        cli_help="the vcluster.yaml NetworkPolicy values for both ends of a client/target pair",
    ),
    SubcommandSpec(
        "ack",
        Slash(
            Usage(_TARGET),
            "ack TARGET",
            'acknowledge the firing alerts about TARGET posted in this channel ("I have it", shown on them)',
            "ack platform/crd-store",
        ),
    ),
    SubcommandSpec(
        "unack",
        Slash(
            Usage(_TARGET),
            "unack TARGET",
            "remove the acknowledgement of the firing alerts about TARGET posted in this channel",
            "unack platform/crd-store",
        ),
    ),
    SubcommandSpec(
        "silence",
        # `silence TARGET [DURATION]`, `silence list`, `silence expire ID`: told apart by the first word.
        Slash(
            Usage(("TARGET|list|expire", "DURATION|ID?"), {"--reason": Option(Takes.WORDS, "TEXT")}),
            "silence TARGET [DURATION] [--reason TEXT] · silence list · silence expire ID",
            "Alertmanager silences for one target's alerts (default 1h)",
            "silence platform/crd-store 2h --reason target upgrade",
            Access.SILENCE,
        ),
    ),
    SubcommandSpec(
        "fleet",
        Slash(
            Usage(),
            "fleet",
            "the fleet as the bot sees it: each client, where it came from (platform or config), its "
            "project, control plane, channel, targets and problems",
            "fleet",
        ),
        cli="bot.cli.fleet",
    ),
    SubcommandSpec(
        "digest",
        Slash(Usage(), "digest", "post the fleet health digest now", "digest", Access.FLEET),
        cli="bot.cli.digest",
        cli_help="the fleet health digest now: printed, or posted to Slack with --post",
    ),
    SubcommandSpec(
        "check-config", cli="bot.cli.check_config", cli_help="validate the config and print every problem"
    ),
    SubcommandSpec(
        "check-vcluster",
        cli="bot.cli.check_vcluster",
        cli_help="judge a client's vcluster.yaml resource proxy section as vCluster's startup validation "
        "does",
    ),
    SubcommandSpec(
        "demo",
        cli="bot.cli.main",
        cli_help="run everything on this machine: simulated clusters, the bot, Slack shown in the terminal",
    ),
    SubcommandSpec(
        "serve",
        cli="bot.cli.serve",
        cli_help="run the bot: webhook intake, Slack, health and metrics endpoints, workers",
    ),
    SubcommandSpec(
        "sim",
        cli="bot.cli.main",
        cli_help="run the simulated client/target tenant clusters alone; write kubeconfigs and a config",
    ),
)

BY_NAME: Mapping[str, SubcommandSpec] = {spec.name: spec for spec in SUBCOMMANDS}
SLASH: Mapping[str, Slash] = {spec.name: spec.slash for spec in SUBCOMMANDS if spec.slash is not None}
CONSOLE: tuple[SubcommandSpec, ...] = tuple(spec for spec in SUBCOMMANDS if spec.cli is not None)
