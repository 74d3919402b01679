"""The demo's stops: one scenario run for a while, or the tour (`proxybot demo --tour`), every scenario that
matters in one run, each in a channel of its own and announced.

A stop's `play` waits for what the stop is there to show (bounded by its `seconds`), and presses buttons or
types `/proxy` through the page (`sim.slack_page`: signed as Slack signs them), as a person would. A stop
with `hold_at` has its simulated clock stop at that second, once what it shows has happened: its messages
then settle on the same content however fast the machine is (the README's pictures are taken of them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from bot.render.acknowledge import ACK_BLOCK_ID
from bot.render.silence_modal import COMMENT_BLOCK, CUSTOM_BLOCK, DURATION_BLOCK
from bot.render.slack import ACTION_ACK, ACTION_PATH, ACTION_PROBE, ACTION_SILENCE
from sim.alertmanager_api import AlertmanagerApi
from sim.scenarios import SCENARIOS, STORM_TARGETS
from sim.slack_api import FakeSlack, Message, iter_texts
from sim.slack_page import SlackPage
from sim.slack_page_view import PNG_MAGIC

DEFAULT_SPEED = 20.0
POLL = 0.2
SILENCE_FOR = "4h"
SILENCE_COMMENT = "crd-store is being rebuilt: back by 13:30 (tour)"


class Say(Protocol):
    def say(self, text: str) -> None: ...


@dataclass
class StopRun:
    """One stop while its bot runs: what its play looks at and does."""

    slack: FakeSlack
    page: SlackPage
    channel: str  # the stop's channel ID
    sink: Say
    alertmanager: AlertmanagerApi  # the stop's simulated Alertmanager (its silences)
    # True once the held simulation has nothing more to send and the bot has applied and delivered it all.
    settled: Callable[[], Awaitable[bool]] | None = None

    def top(self) -> list[Message]:
        return sorted(self.slack.top_level(self.channel), key=lambda m: float(m.ts))

    def replies(self, msg: Message) -> list[Message]:
        return self.slack.thread(self.channel, msg.ts)

    def uploads(self) -> list[dict[str, Any]]:
        return [u for u in self.slack.shown_uploads() if u.get("channel_id") == self.channel]

    def first(self, check: Callable[[Message], bool]) -> Message | None:
        return next((m for m in self.top() if check(m)), None)

    async def until(self, check: Callable[[], object]) -> Any:
        """Wait for `check()` to be truthy and return it (the stop's own `seconds` bound the wait)."""
        while not (found := check()):  # noqa: ASYNC110 - the fake Slack's state has no event to wait on
            await asyncio.sleep(POLL)
        return found

    async def until_settled(self) -> None:
        """Wait until the stop's held simulation and its bot are done (at once for a stop not held)."""
        while self.settled is not None and not await self.settled():  # noqa: ASYNC110 - polled, no event
            await asyncio.sleep(POLL)

    async def press(self, msg: Message, action_id: str, label: str) -> None:
        """Press the button `action_id` on `msg` through the page."""
        block_id = button_block(msg, action_id)
        self.sink.say(f"── pressed {label} on the page (a signed block_actions to the bot)")
        await self.page.press(self.channel, msg.ts, block_id, action_id)

    async def submit(self, typed: Mapping[str, str | None]) -> dict[str, Any]:
        """Fill in the modal open on the page with `typed` (block ID -> text or option) and press Submit:
        the page sends the signed view_submission; its answer (whether the modal closed)."""
        modal = await self.until(self.page.modal)
        self.sink.say("── submitted the modal on the page (a signed view_submission to the bot)")
        return await self.page.submit(modal.id, typed)

    async def type_command(self, text: str) -> None:
        self.sink.say(f"── typed `/proxy {text}` in the page's command box (a signed slash command)")
        await self.page.command(self.channel, text)


Play = Callable[[StopRun], Awaitable[None]]


@dataclass(frozen=True)
class Stop:
    """One scenario run through its own bot, posting to `channel`, until `play` has shown its `goal`."""

    scenario: str
    speed: float
    seconds: float
    channel: str
    play: Play
    title: str = ""
    goal: str = ""  # what the play waits for, as the terminal says it (none: run for `seconds`)
    hold_at: float | None = None  # the simulated second its clock stops at (sim.server.SimServer)
    tour: bool = field(default=False, compare=False)
    epoch: float | None = None  # the unix time of its simulated t=0 (None: when it starts)
    # Its webhooks wait for the hold: the bot reads only the held world (sim.server.SimServer).
    feed_at_hold: bool = False
    wide: bool = False  # the scenario set in the demo's fleet (`sim.defaults.demo_fleet`)
    # A simulated day before it sampled into its bot's store first (`bot.cli.demo`): its digest charts a day.
    past_day: bool = False

    def announcement(self, i: int, count: int, page_url: str, channel_id: str) -> str:
        if not self.tour:
            return f"scenario {self.scenario} at {self.speed:g}x for {self.seconds:g}s"
        return (
            f"\n══ tour {i}/{count}: {self.title}\n"
            f"   scenario {self.scenario} at {self.speed:g}x, in {self.channel} "
            f"({page_url}?channel={channel_id}); until {self.goal}"
        )


def texts(msg: Message) -> str:
    return "\n".join([msg.text, *iter_texts(msg.blocks)])


def button_block(msg: Message, action_id: str) -> str:
    """The ID of the block holding the button `action_id` (KeyError when the message has none)."""
    for block in msg.blocks:
        if isinstance(block, dict) and any(
            isinstance(e, dict) and e.get("action_id") == action_id for e in block.get("elements") or []
        ):
            return str(block.get("block_id", ""))
    raise KeyError(action_id)


def has_button(msg: Message, action_id: str) -> bool:
    try:
        button_block(msg, action_id)
    except KeyError:
        return False
    return True


def _sleep_for(seconds: float) -> Play:
    async def play(_: StopRun) -> None:
        await asyncio.sleep(seconds)

    return play


def single_stop(scenario: str, speed: float | None, duration: float, channel: str) -> Stop:
    """`proxybot demo --scenario S`: the scenario for `duration` seconds."""
    chosen = speed if speed is not None else SCENARIOS[scenario].demo_speed or DEFAULT_SPEED
    return Stop(scenario, chosen, duration, channel, _sleep_for(duration))


# -- the tour ---------------------------------------------------------------------------------------------


async def _heals(run: StopRun) -> None:
    await run.until(lambda: run.first(lambda m: bool(m.versions) and "RESOLVED" in texts(m)))


async def _probe_and_path(run: StopRun) -> None:
    alert = await run.until(lambda: run.first(lambda m: has_button(m, ACTION_PROBE)))
    await run.until_settled()  # every alert of the hold in its message and thread before the presses
    for action_id, label, check in PRESSES:
        before = _answers(run, alert, check)
        await run.press(alert, action_id, label)
        await run.until(_answered(run, alert, check, before))
    # "I have it": the message edited in place with who, the terminal printing the edit.
    await run.press(alert, ACTION_ACK, "*Acknowledge*")
    await run.until(lambda: any(b.get("block_id") == ACK_BLOCK_ID for b in alert.blocks))
    await _silence(run, alert)
    await run.until_settled()


async def _silence(run: StopRun, alert: Message) -> None:
    """*Silence…* pressed, its modal submitted on the page with a duration and a reason: the silence is
    made in the stop's Alertmanager and the message shows it (the terminal prints the edit)."""
    await run.press(alert, ACTION_SILENCE, "*Silence…*")
    typed = {DURATION_BLOCK: SILENCE_FOR, CUSTOM_BLOCK: "", COMMENT_BLOCK: SILENCE_COMMENT}
    answer = await run.submit(typed)
    if not answer.get("closed"):
        run.sink.say(f"── the modal stayed open: {answer}")
        return
    await run.until(lambda: "🔕 Silenced by" in texts(alert) and SILENCE_COMMENT in texts(alert))
    for silence in run.alertmanager.silences():
        matchers = ", ".join(f"{m.name}{'=~' if m.is_regex else '='}{m.value}" for m in silence.matchers)
        run.sink.say(
            f"── Alertmanager lists silence {silence.id} ({matchers}) by {silence.created_by}: "
            f"{silence.comment}"
        )


PRESSES = ((ACTION_PROBE, "*Probe now*", "Probe"), (ACTION_PATH, "*Path check*", "Path"))


def _answered(run: StopRun, msg: Message, check: str, before: int) -> Callable[[], bool]:
    return lambda: _answers(run, msg, check) > before


def _answers(run: StopRun, msg: Message, check: str) -> int:
    """The answers of that check in the message's thread (other replies come too: a joining alert's)."""
    return sum(f"{check} platform/" in texts(r) for r in run.replies(msg))


async def _one_incident(run: StopRun) -> None:
    await run.until(lambda: run.first(lambda m: "one cause:" in texts(m)))


async def _shared_target(run: StopRun) -> None:
    # Every client's groups folded into one message, which names the three clients hit and the one not.
    hit = ("`team-a`", "`team-b`", "`team-c`")
    await run.until(
        lambda: run.first(
            lambda m: "3 of 4 clients cannot reach" in texts(m) and all(h in texts(m) for h in hit)
        )
    )


async def _changed_before(run: StopRun) -> None:
    # The alert after team-a's vcluster.yaml changed says so; its details reply has the diff.
    alert = await run.until(lambda: run.first(lambda m: "retargeted" in texts(m)))
    await run.until(lambda: any("the diff:" in texts(r) for r in run.replies(alert)))


async def _flaps(run: StopRun) -> None:
    await run.until(lambda: run.first(lambda m: "lapping: " in texts(m)))


async def _storm_table(run: StopRun) -> None:
    # Every target in the summary and in its table (the first summary may count the groups in so far).
    whole = f"Alert storm: {STORM_TARGETS + 1} targets"
    await run.until(lambda: run.first(lambda m: whole in texts(m)) and _table_rows(run) > STORM_TARGETS)
    await run.until_settled()  # every alert up to the hold in the summary and its table
    # Acknowledged from the page: the summary ends edited however its alerts arrived (whole at once or not).
    summary = await run.until(lambda: run.first(lambda m: whole in texts(m)))
    await run.press(summary, ACTION_ACK, "*Acknowledge*")
    await run.until(lambda: "Acknowledged by" in texts(summary))
    await run.until_settled()


def _table_rows(run: StopRun) -> int:
    """The targets in the storm's table: its table block reply in the summary's thread, else its file."""
    for summary in run.top():
        for reply in run.replies(summary):
            rows = [r for b in reply.blocks if b.get("type") == "table" for r in b.get("rows") or []]
            if rows:
                return sum("platform/" in cell for cell in iter_texts(rows))
    tables = [u for u in run.uploads() if u.get("thread_ts")]
    return bytes(tables[-1].get("content") or b"").count(b"platform/") if tables else 0


async def _digest(run: StopRun) -> None:
    # The fleet is read first, so the digest has a degraded target to tell of (the night's message, above
    # it in the channel, resolved).
    await run.until(lambda: run.first(lambda m: has_button(m, ACTION_PROBE) and "RESOLVED" not in texts(m)))
    await run.until_settled()  # held: the acknowledgement's time is the hold's, the same on every run
    # Acknowledged from the page, so the digest's on-call line has a time to acknowledge to tell.
    alert = await run.until(lambda: run.first(lambda m: has_button(m, ACTION_ACK)))
    await run.press(alert, ACTION_ACK, "*Acknowledge*")
    await run.until(lambda: "Acknowledged by" in texts(alert))
    await run.type_command("digest")
    await run.until(lambda: any(bytes(u.get("content") or b"").startswith(PNG_MAGIC) for u in run.uploads()))
    await run.until_settled()  # both charts shared


# The held stops are those the README pictures (scripts/screenshots.py). Their alerting model runs on the
# simulated clock (sim/alerting.py: scrapes every 15 simulated seconds from t=0, each notification at its
# own second), so what they notify, and when, is the same on every machine. Target-down notifies at t=120
# (TargetUnavailable), 135 (PeerChurn) and 225 (NoHealthyPeers); both of its stops are held after the last
# they show, and their webhooks wait for the hold. The storm's PeerCacheUnsynced on every target is notified
# at t=285, as the clock reaches its hold (earlier alerts, at 150 and 255, are posted as they come).
TOUR_EPOCH = datetime(2026, 3, 2, 9, 40, tzinfo=UTC).timestamp()  # the tour's t=0: a Monday morning
HELD_AT_HOLD = {"#tour-target-down", "#tour-digest"}
IN_THE_DEMO_FLEET = {"#tour-digest"}  # the digest tells of a fleet: 3 clients, 2 projects, 12 targets
WITH_A_PAST_DAY = {"#tour-digest"}  # its charts draw a day: the night's outage, its dip and recovery
TOUR: tuple[tuple[str, str, float, float, str, Play, str, float | None], ...] = (
    # (scenario, channel, speed, most seconds, title, play, goal, hold_at)
    ("target-rolling-restart", "#tour-restart", 40.0, 150.0, "a target restart that heals", _heals,
     "the alert resolves in place", None),
    ("target-down", "#tour-target-down", 40.0, 150.0,
     "a target down: Probe now, Path check, Acknowledge and Silence… pressed", _probe_and_path,
     "both answers are in the alert's thread, it shows who has it and the silence", 226.0),
    ("peer-watch-dropped", "#tour-incident", 40.0, 150.0, "a dropped peer watch, one incident",
     _one_incident, "its alerts are one incident's message", None),
    ("shared-target-down", "#tour-shared", 10.0, 90.0, "one target, four clients, three cut off",
     _shared_target, "one message names the three clients hit and the one still healthy", None),
    ("config-change", "#tour-change", 5.0, 90.0, "a vcluster.yaml changed, then an alert",
     _changed_before, "the alert says what changed before it, its diff in the thread", None),
    ("flapping", "#tour-flapping", 60.0, 150.0, "a flapping target", _flaps,
     "the message counts the flaps", None),
    ("storm", "#tour-storm", 40.0, 150.0, "a storm of 31 targets", _storm_table,
     "the storm's table is in its thread and it is acknowledged", 285.5),
    ("target-down", "#tour-digest", 20.0, 150.0, "the fleet digest, with its charts", _digest,
     "the digest and its charts are posted", 140.0),
)  # fmt: skip


def tour_stops(speed: float | None = None) -> list[Stop]:
    """Every scenario that matters, in order; `speed` overrides each stop's own. The tour's simulated
    clock starts at `TOUR_EPOCH` in every stop, so its dates and times are the same on every run."""
    return [
        Stop(
            scenario, speed or own, seconds, channel, play, title, goal, hold_at, tour=True,
            epoch=TOUR_EPOCH, feed_at_hold=channel in HELD_AT_HOLD, wide=channel in IN_THE_DEMO_FLEET,
            past_day=channel in WITH_A_PAST_DAY,
        )
        for scenario, channel, own, seconds, title, play, goal, hold_at in TOUR
    ]  # fmt: skip


__all__ = ["Stop", "StopRun", "single_stop", "tour_stops"]
