"""Benchmark: `/proxy` ack latency while a 1 000-alert storm is processed and a probed cluster hangs; the
alert buttons' press -> message edited, and the *Silence…* modal's `views.open` with the leader busy.

Run from the repository root:
`.venv/bin/python bench/ack.py [--only commands|buttons] [--presses N] [--profile DIR]`.

Part `commands`. The bot runs as its own process: `proxybot serve` as it runs (`bot.cli.main`, its
startup included: the collector's freeze of everything built at start), its event loop watched by
`bench/loop_stalls.py` (a heartbeat every 2 ms; while it is late, the loop thread's stack is sampled). Its
config adds a second client cluster, `hung`, whose API server accepts connections and never answers; half
the commands sent under load probe a target of it, so their checks hang for the probe's 15 s timeout.

Measured: seconds from POSTing a signed `/proxy` request to its HTTP response (the ack), first with no
load (the baseline), then during the storm (webhooks to `/alertmanager` for 2 s, and on while the bot
processes them). Every request goes out from load generator processes of their own (bench/loadgen.py),
prepared and signed here, so their work is not counted as the bot's. Beside the acks, `GET /healthz`
every 10 ms (it waits only for the event loop) in three windows: idle (nothing else sent), quiet (the
storm's commands, no storm: the baseline) and during the storm, each with the loop's longest stall and how
much of it the loop's thread ran, or waited for a CPU (the machine's load, not the bot's code). Its last
lines are `loop_stall_max_ms: quiet <n>, storm <n>` and `ack_p99_ms: <n>` (under load; target <= 100);
the goal for `/healthz`: p99 during the storm within 5x the quiet p99. `--profile DIR` keeps the watched
bot's stalls, their sampled stacks, its slow callbacks and garbage collections (`bench/loop_stalls.py`).

Part `buttons`. The same bot process (one cluster, Alice may silence), one alert group posted: seconds
from a signed *Acknowledge* / *Unacknowledge* press (alternating, each after the message's edit spacing,
`DeliveryPolicy.edit_interval`) to the fake Slack holding the edited message, beside the same run's
`GET /healthz` answers taken between the presses (the baseline); then seconds from a *Silence…* press to
the fake Slack's `views.open`, quiet and while a 1 000-alert storm keeps the leader busy. Its last lines
are `edit_p99_ms: <n>` (target <= 1000) and `views_open_max_ms: <n>` (target <= 1500, half of the 3 s
Slack gives a trigger id).

The exit status is 0 when every part asked holds.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot` and `tests`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import yaml

from bench import loadgen
from bench.loadgen import LoadRun, Outcome, Plan, Planned
from bench.loop_stalls import Stall, Stalls, WatchedLoops
from bot.delivery.plan import DeliveryPolicy
from bot.render.slack import ACTION_ACK, ACTION_SILENCE, ACTION_UNACK
from sim.server import SimServer
from sim.slack_api import FakeSlack, Message
from tests.e2e.stack import (
    ALICE,
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    BotProcess,
    StoreView,
    alert_entry,
    auth,
    buttons,
    notification,
    now,
    proxy_alert,
    write_bot_config,
)
from tests.e2e.storm_load import percentile, split, storm_bodies, storm_plan
from tests.fakes.slack_requests import button_body, command_body, signed

BASELINE_COMMANDS = 200
LOAD_INTERVAL = 0.05  # a command every 50 ms while the storm runs (far beyond people typing)
LOAD_SECONDS_MAX = 20.0
QUIET_SECONDS = 4.0
IDLE_SECONDS = 2.0
HEALTHZ_INTERVAL = 0.01
HEALTHZ_RATIO_GOAL = 5.0  # /healthz p99 during the storm against the quiet window's
HUNG_TARGET = "platform/never-answers"
OPS = "C0OPS0001"
TEXTS = (f"probe {HUNG_TARGET}", "status platform/crd-store", f"probe {HUNG_TARGET} --repeat 2", "help")
COMMANDS = "commands"
STALLS = "loop-stalls.txt"
HEALTHZ = "healthz"
_keys = itertools.count()


# -- the bot process -----------------------------------------------------------------------------------------


def serve_watched(argv: list[str], stalls: Path) -> int:
    """`proxybot serve` as it runs (`bot.cli.main`, startup included), its event loop watched: stalls
    logged to `stalls` (`bench/loop_stalls.py`)."""
    from bot.cli.main import main as proxybot

    asyncio.set_event_loop_policy(WatchedLoops(stalls))
    return proxybot(argv)


# -- a cluster that never answers ------------------------------------------------------------------------


@contextmanager
def never_answering() -> Iterator[int]:
    """A TCP port that accepts connections and never sends a byte (a hung API server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)
    held: list[socket.socket] = []
    stop = threading.Event()

    def hold() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


def add_hung_cluster(config: Path, port: int) -> None:
    """A second client cluster `hung` (its API never answers) and #ops granted every cluster."""
    doc = yaml.safe_load(config.read_text())
    kubeconfig = config.parent / "hung.kubeconfig.yaml"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "hung",
                "clusters": [
                    {
                        "name": "hung",
                        "cluster": {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True},
                    }
                ],
                "users": [{"name": "hung", "user": {"token": "never-used"}}],
                "contexts": [{"name": "hung", "context": {"cluster": "hung", "user": "hung"}}],
            }
        )
    )
    probe = {"group_version": "example.com/v1", "resource": "widgets", "namespace": "default"}
    target = {"name": HUNG_TARGET, "group_versions": ["example.com/v1"], "probe": probe}
    doc["clusters"].append(
        {"name": "hung", "kubeconfig": str(kubeconfig), "match": {"cluster": "hung"}, "targets": [target]}
    )
    doc["access"] = {"channels": [{"channel": "#ops", "clusters": ["*"]}]}
    config.write_text(yaml.safe_dump(doc, sort_keys=False))


# -- measuring -------------------------------------------------------------------------------------------


def command(slack: FakeSlack, text: str, offset: float) -> Planned:
    """A signed `/proxy` request (its own response_url), due `offset` seconds into a schedule."""
    body = command_body(
        text, slack.response_url(f"a{next(_keys)}"), user="U0OPS0001", channel=OPS, channel_name="ops"
    )
    headers = signed(body, secret=SIGNING_SECRET)
    return Planned(offset, "POST", "/slack/events", headers, body.encode(), COMMANDS)


def ack_seconds(outcomes: list[Outcome]) -> list[float]:
    """The acks' latencies; any command not answered 200 fails the benchmark."""
    acks = [o for o in outcomes if o.lane == COMMANDS]
    for o in acks:
        if o.status != 200:
            raise RuntimeError(f"a /proxy command was answered {o.status} {o.error}".rstrip())
    return [o.seconds for o in acks]


def baseline(url: str, slack: FakeSlack) -> list[float]:
    # All due at once on one connection: they go one after another, each alone on the server.
    requests = [command(slack, TEXTS[i % len(TEXTS)], 0.0) for i in range(BASELINE_COMMANDS)]
    return ack_seconds(loadgen.run(Plan(url, requests, {COMMANDS: 1}, timeout=30.0)))


def pings(url: str, slack: FakeSlack, seconds: float) -> Plan:
    """A command every LOAD_INTERVAL and a GET /healthz every HEALTHZ_INTERVAL for `seconds`."""
    requests = [
        command(slack, TEXTS[i % len(TEXTS)], i * LOAD_INTERVAL) for i in range(int(seconds / LOAD_INTERVAL))
    ]
    requests += [
        Planned(i * HEALTHZ_INTERVAL, "GET", "/healthz", lane=HEALTHZ)
        for i in range(int(seconds / HEALTHZ_INTERVAL))
    ]
    return Plan(url, sorted(requests, key=lambda r: r.offset), {COMMANDS: 8, HEALTHZ: 4}, timeout=30.0)


@dataclass
class Load:
    """What was measured in one window: the acks, /healthz, and the window on the monotonic clock."""

    acks: list[float]
    healthz: list[float]  # how responsive the server is at all: each waits for the event loop
    window: tuple[float, float]
    refused: int = 0  # storm webhooks not answered 2xx

    def longest_stall(self, stalls: Stalls) -> Stall:
        """The event loop's longest stall that began in this window."""
        return stalls.longest(*self.window)


def measured(run: LoadRun) -> tuple[list[float], list[float]]:
    outcomes = run.outcomes()
    for o in outcomes:
        if o.lane == HEALTHZ and o.status != 200:
            raise RuntimeError(f"GET /healthz was answered {o.status} {o.error}".rstrip())
    return ack_seconds(outcomes), [o.seconds for o in outcomes if o.lane == HEALTHZ]


def idle(url: str) -> Load:
    """GET /healthz alone, nothing else sent: how fast the server answers when nothing holds its loop."""
    requests = [
        Planned(i * HEALTHZ_INTERVAL, "GET", "/healthz", lane=HEALTHZ)
        for i in range(int(IDLE_SECONDS / HEALTHZ_INTERVAL))
    ]
    with LoadRun(Plan(url, requests, {HEALTHZ: 1}, timeout=30.0)) as run:
        start = run.started()
        while not run.done():
            time.sleep(LOAD_INTERVAL)
        end = time.monotonic()
        _, healthz = measured(run)
    return Load([], healthz, (start, end))


def quiet(url: str, slack: FakeSlack) -> Load:
    """The storm's commands and /healthz, with no storm: the baseline of the loop's responsiveness."""
    with LoadRun(pings(url, slack, QUIET_SECONDS)) as run:
        start = run.started()
        while not run.done():
            time.sleep(LOAD_INTERVAL)
        end = time.monotonic()
        acks, healthz = measured(run)
    return Load(acks, healthz, (start, end))


def under_storm(url: str, slack: FakeSlack, store: StoreView) -> Load:
    """Commands and /healthz sent during the storm and its processing."""
    storm_load = storm_plan(url, storm_bodies(500), seconds=2.0, probe_path=None, timeout=60.0)
    # Two generator processes: the storm's end (all answered) is known apart from the commands'.
    with LoadRun(storm_load) as storm, LoadRun(pings(url, slack, LOAD_SECONDS_MAX)) as commands:
        storm.started()
        start = commands.started()
        while not (storm.done() and store.unprocessed() == 0) and time.monotonic() - start < LOAD_SECONDS_MAX:
            time.sleep(LOAD_INTERVAL)
        end = time.monotonic()
        commands.stop()
        acks, healthz = measured(commands)
        webhooks, _ = split(storm.outcomes())
    refused = sum(1 for s in webhooks if not 200 <= s.status < 300)
    return Load(acks, healthz, (start, end), refused)


def ms(values: list[float], q: float) -> float:
    return 1000 * percentile(values, q)


def run_commands(workdir: Path) -> bool:
    with (
        SimServer(scenario="healthy", speed=20) as sim,
        FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack,
        never_answering() as hung_port,
    ):
        slack.add_channel(OPS, name="#ops")
        config = write_bot_config(sim, workdir, slack.api_url)
        add_hung_cluster(config, hung_port)
        with BotProcess(config, workdir / "bot.log", command=bot_command(workdir / STALLS)) as bot:
            store = StoreView(workdir / "bot.db")
            alone = baseline(bot.url, slack)
            nothing = idle(bot.url)
            calm = quiet(bot.url, slack)
            load = under_storm(bot.url, slack, store)
            left = store.unprocessed()
        stalls = Stalls.read(workdir / STALLS)
    loaded = load.acks
    print(
        f"baseline (no load): {len(alone)} commands, p50 {ms(alone, 50):.1f} ms, p99 {ms(alone, 99):.1f} ms"
    )
    print(
        f"during the storm (1000 alerts over 500 targets, {HUNG_TARGET} hanging): {len(loaded)} commands, "
        f"p50 {ms(loaded, 50):.1f} ms, p99 {ms(loaded, 99):.1f} ms, max {1000 * max(loaded):.1f} ms"
    )
    print(f"ratio p99 storm/baseline: {ms(loaded, 99) / ms(alone, 99):.2f}")
    print(f"storm webhooks not answered 2xx: {load.refused}; notifications unprocessed at the end: {left}")
    healthz_ratio = ms(load.healthz, 99) / ms(calm.healthz, 99)
    windows = (
        ("idle (nothing else sent)", nothing),
        ("quiet (the same commands, no storm)", calm),
        ("during the storm (and the same commands)", load),
    )
    for name, window in windows:
        print(
            f"GET /healthz every {1000 * HEALTHZ_INTERVAL:.0f} ms, {name}: {len(window.healthz)} answers, "
            f"p50 {ms(window.healthz, 50):.1f} ms, p99 {ms(window.healthz, 99):.1f} ms; "
            f"the event loop's longest stall {window.longest_stall(stalls)}"
        )
    print(
        f"ratio /healthz p99 storm/quiet: {healthz_ratio:.2f} (goal <= {HEALTHZ_RATIO_GOAL:g}); "
        f"storm/idle: {ms(load.healthz, 99) / ms(nothing.healthz, 99):.2f}"
    )
    quiet_ms, storm_ms = (1000 * window.longest_stall(stalls).seconds for window in (calm, load))
    longest = f"quiet {quiet_ms:.1f}, storm {storm_ms:.1f}"
    print(f"loop_stall_max_ms: {longest}")
    print(f"ack_p99_ms: {ms(loaded, 99):.1f}")
    return ms(loaded, 99) <= 100 and healthz_ratio <= HEALTHZ_RATIO_GOAL


def bot_command(stalls: Path) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--as-bot", "--stalls", str(stalls)]


# -- the buttons -------------------------------------------------------------------------------------------

EDIT_P99_MS = 1000.0
VIEWS_OPEN_MAX_MS = 1500.0
WAIT = 30.0
HEALTHZ_PER_PRESS = 5
ACK_LINE = f"Acknowledged by <@{ALICE}>"


def until(check: Callable[[], object], what: str, timeout: float = WAIT) -> float:
    """Poll `check` every millisecond; the monotonic time it first held."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.001)
    return time.monotonic()


def shown(message: Message) -> str:
    return "\n".join([message.text, *(str(b) for b in message.blocks)])


def press(http: httpx.Client, slack: FakeSlack, message: Message, action_id: str, trigger: str) -> float:
    """A signed press of a button on `message` by Alice; the monotonic time it was sent."""
    # Either acknowledge button carries the message's reference; the one shown is the one pressed.
    wanted = (ACTION_ACK, ACTION_UNACK) if action_id in (ACTION_ACK, ACTION_UNACK) else (action_id,)
    button = next(b for b in buttons(message) if b["action_id"] in wanted)
    body = button_body(
        action_id,
        button["value"],
        slack.response_url(f"p{next(_keys)}"),
        user=ALICE,
        user_name="alice",
        channel=message.channel,
        channel_name=CHANNEL.removeprefix("#"),
        message_ts=message.ts,
        trigger_id=trigger,
    )
    sent = time.monotonic()
    answer = http.post("/slack/events", content=body, headers=signed(body, secret=SIGNING_SECRET))
    if answer.status_code != 200:
        raise RuntimeError(f"a press was answered {answer.status_code}: {answer.text[:200]}")
    return sent


def healthz_seconds(http: httpx.Client, times: int) -> list[float]:
    found = []
    for _ in range(times):
        start = time.monotonic()
        http.get("/healthz").raise_for_status()
        found.append(time.monotonic() - start)
    return found


def edits(
    http: httpx.Client, slack: FakeSlack, message: Message, presses: int
) -> tuple[list[float], list[float]]:
    """(press -> edited seconds, /healthz seconds) over `presses` alternating Acknowledge / Unacknowledge."""
    edited: list[float] = []
    healthz: list[float] = []
    for i in range(presses):
        time.sleep(DeliveryPolicy().edit_interval)  # the message's previous edit's spacing has passed
        healthz += healthz_seconds(http, HEALTHZ_PER_PRESS)
        edited.append(edit_once(http, slack, message, acking=i % 2 == 0))
    return edited, healthz


def edit_once(http: httpx.Client, slack: FakeSlack, message: Message, *, acking: bool) -> float:
    versions = len(message.versions)
    action = ACTION_ACK if acking else ACTION_UNACK
    sent = press(http, slack, message, action, slack.views.issue_trigger())
    done = until(
        lambda: len(message.versions) > versions and (ACK_LINE in shown(message)) == acking,
        "the message edited",
    )
    return done - sent


def modal_opens(
    http: httpx.Client, slack: FakeSlack, message: Message, presses: int, gap: float
) -> list[float]:
    """Seconds from a *Silence…* press to the fake Slack's views.open, `presses` times `gap` apart."""
    found = []
    for _ in range(presses):
        found.append(open_once(http, slack, message))
        time.sleep(gap)
    return found


def open_once(http: httpx.Client, slack: FakeSlack, message: Message) -> float:
    opened = len(slack.views.opened)
    sent = press(http, slack, message, ACTION_SILENCE, slack.views.issue_trigger())
    return until(lambda: len(slack.views.opened) > opened, "views.open") - sent


def run_buttons(workdir: Path, presses: int) -> bool:
    with (
        SimServer(scenario="healthy", speed=20) as sim,
        FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack,
    ):
        config = write_bot_config(sim, workdir, slack.api_url)
        doc = yaml.safe_load(config.read_text())
        doc["access"] = {**(doc.get("access") or {}), "silencers": [ALICE]}
        config.write_text(yaml.safe_dump(doc, sort_keys=False))
        with (
            BotProcess(config, workdir / "bot.log", command=bot_command(workdir / STALLS)) as bot,
            httpx.Client(base_url=bot.url, timeout=WAIT) as http,
        ):
            body = notification([alert_entry(proxy_alert(), now())])
            http.post("/alertmanager", json=body, headers=auth()).raise_for_status()
            until(lambda: slack.top_level(CHANNEL), "the alert's message")
            [message] = slack.top_level(CHANNEL)
            edited, healthz = edits(http, slack, message, presses)
            quiet = modal_opens(http, slack, message, max(3, presses // 2), gap=0.2)
            store = StoreView(workdir / "bot.db")
            storm_load = storm_plan(bot.url, storm_bodies(500), seconds=2.0, probe_path=None, timeout=60.0)
            with LoadRun(storm_load) as storm:
                storm.started()
                stormy = modal_opens(http, slack, message, max(3, presses // 2), gap=0.2)
                busy = store.unprocessed()
                while not storm.done():
                    time.sleep(0.05)
    print(
        f"GET /healthz between the presses (the baseline): {len(healthz)} answers, "
        f"p50 {ms(healthz, 50):.1f} ms, p99 {ms(healthz, 99):.1f} ms"
    )
    print(
        f"press -> message edited (Acknowledge / Unacknowledge): {len(edited)} presses, "
        f"p50 {ms(edited, 50):.1f} ms, p99 {ms(edited, 99):.1f} ms, max {1000 * max(edited):.1f} ms"
    )
    print(
        f"ratio press -> edited / healthz: p50 {ms(edited, 50) / ms(healthz, 50):.1f}, "
        f"p99 {ms(edited, 99) / ms(healthz, 99):.1f}"
    )
    print(
        f"Silence… press -> views.open, quiet: {len(quiet)} presses, p50 {ms(quiet, 50):.1f} ms, "
        f"max {1000 * max(quiet):.1f} ms"
    )
    print(
        f"Silence… press -> views.open, during a 1000-alert storm ({busy} notifications queued at the "
        f"last press): {len(stormy)} presses, p50 {ms(stormy, 50):.1f} ms, max {1000 * max(stormy):.1f} ms"
    )
    print(f"ratio views.open storm/quiet (p50): {ms(stormy, 50) / ms(quiet, 50):.2f}")
    print(f"edit_p99_ms: {ms(edited, 99):.1f}")
    print(f"views_open_max_ms: {1000 * max([*quiet, *stormy]):.1f}")
    return ms(edited, 99) <= EDIT_P99_MS and 1000 * max([*quiet, *stormy]) <= VIEWS_OPEN_MAX_MS


PARTS = ("commands", "buttons")


def keep(workdir: Path, into: Path) -> None:
    """The watched bot's files (`bench/loop_stalls.py`) and its log, copied into `into`."""
    into.mkdir(parents=True, exist_ok=True)
    for found in [*workdir.glob(f"{STALLS}*"), workdir / "bot.log"]:
        shutil.copy(found, into / found.name)


def main() -> int:
    if sys.argv[1:2] == ["--as-bot"]:
        # BotProcess appends `serve --config F --host H --port P` to `--stalls PATH`.
        return serve_watched(sys.argv[4:], Path(sys.argv[3]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", choices=PARTS, action="append", help="run this part only (repeatable)")
    parser.add_argument("--presses", type=int, default=20, help="button presses measured (default 20)")
    parser.add_argument(
        "--profile", type=Path, help="keep the bot's loop stalls, their sampled stacks and GC pauses here"
    )
    options = parser.parse_args()
    held = []
    for part in options.only or PARTS:
        with tempfile.TemporaryDirectory(prefix=f"proxybot-bench-{part}-") as workdir:
            ok = (
                run_commands(Path(workdir))
                if part == "commands"
                else run_buttons(Path(workdir), options.presses)
            )
            if options.profile is not None:
                keep(Path(workdir), options.profile / part)
        print(f"ack_{part}_ok: {'yes' if ok else 'no'}")
        held.append(ok)
    return 0 if all(held) else 1


if __name__ == "__main__":
    sys.exit(main())
