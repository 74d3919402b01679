"""The buttons on alert messages, dispatched: *Silence…* and *Expire silence* (`handlers.silence`),
*Acknowledge* / *Unacknowledge* (`handlers.acknowledge`) when an outbox is given, link buttons, and
*Probe now* / *Path check* when their checks are given (their flow is here).

Each button is answered to Slack at once (`handlers.pressed.answer_slack`) and its work runs after, as a
bolt lazy listener, so a slow Alertmanager or cluster never delays that answer. Every outcome is said:
refusals and failures ephemerally to the person who pressed (through `response_url`), results in the
alert's thread. A thread answer is a reply in the outbox like every other Slack operation (paced, 429s and
Slack's failures retried, kept across a restart), keyed by the press so a redelivered press adds none.
A failure is a sentence naming what failed, never a stack trace and never silence.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncRespond

from bot.alerts.silences import SilenceWatch
from bot.domain.resolution import EventKind, OncallEvent
from bot.errors import Refused
from bot.ports import Silences, ThreadReplies, ViewOpener
from bot.render.blocks import Message, code, context, message, one_line, section, truncate
from bot.render.slack import ACTION_PATH, ACTION_PROBE, LINK_ACTION_PREFIX
from bot.store.base import GroupStore
from bot.store.errors import StoreError
from bot.store.models import AlertGroupState
from config.clusters import ClusterSettings, TargetSettings
from config.settings import Requester, Settings
from handlers import acknowledge, silence
from handlers.acknowledge import Acknowledger
from handlers.pressed import Pressed, answer_press, answer_slack, drawn_group, ephemeral
from handlers.respond import say

log = logging.getLogger(__name__)

# How much of a check's answer its on-call record keeps (the resolution summary's line for it).
CHECK_OUTCOME_CHARS = 200

# A button's check: runs against one configured target of one cluster, returns the answer to post.
Check = Callable[[ClusterSettings, TargetSettings], Awaitable[Message]]


@dataclass(frozen=True)
class ButtonChecks:
    """The checks behind *Probe now* and *Path check*; a button is only registered when its check is."""

    probe: Check | None = None
    path: Check | None = None


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ActionDeps:
    """What the buttons use; `silencer` is None when `alertmanager.url` is not configured, `replies`
    None when no outbox is given (answers then go to the person who pressed only), `acks` None when
    there is no outbox to edit the message through (the acknowledge buttons are then not registered)."""

    settings: Settings
    groups: GroupStore
    silencer: Silences | None
    checks: ButtonChecks = field(default_factory=ButtonChecks)
    now: Callable[[], datetime] = _utc_now
    replies: ThreadReplies | None = None
    acks: Acknowledger | None = None
    views: ViewOpener | None = None  # the Slack client's views.open, for the silence form
    watch: SilenceWatch | None = None  # Alertmanager's silences as messages show them; told of changes

    def silence_deps(self) -> silence.SilenceDeps:
        """What the silence buttons use of these."""
        return silence.SilenceDeps(
            self.settings, self.groups, self.silencer, self.now, self.replies, self.views, self.watch
        )


def register(app: AsyncApp, deps: ActionDeps) -> None:
    """Add the buttons' listeners to `app`: always *Silence…* and its modal, the others only when what
    they need is given."""
    silence.register(app, deps.silence_deps())
    # Link buttons (graph, silence page) open their page in the browser; Slack still wants the press answered.
    app.action(re.compile(f"^{re.escape(LINK_ACTION_PREFIX)}"))(answer_slack)
    if deps.acks is not None:
        acknowledge.register(app, deps.settings, deps.groups, deps.acks)
    for action_id, verb, check, kind in (
        (ACTION_PROBE, "Probing", deps.checks.probe, EventKind.PROBE),
        (ACTION_PATH, "Checking the path to", deps.checks.path, EventKind.PATH_CHECK),
    ):
        if check is not None:
            app.action(action_id)(ack=answer_slack, lazy=[_check_listener(deps, verb, check, kind)])


# -- Probe now / Path check ----------------------------------------------------------------------------


def _check_listener(
    deps: ActionDeps, verb: str, check: Check, kind: EventKind
) -> Callable[..., Awaitable[None]]:
    async def run_button_check(body: dict[str, Any], respond: AsyncRespond) -> None:
        async def run(pressed: Pressed) -> None:
            cluster, target = _check_allowed(deps.settings, pressed)
            await ephemeral(respond, f"{verb} {code(target.name)}…")
            answer = await check(cluster, target)
            group = await _group_of(deps.groups, pressed.ref.group, pressed.who)
            await _in_thread(deps, respond, pressed, group, answer)
            if group is not None:
                await _record_check(deps, pressed, group, kind, answer)

        await answer_press(respond, "check", run, body, log)

    return run_button_check


async def _record_check(
    deps: ActionDeps, pressed: Pressed, group: AlertGroupState, kind: EventKind, answer: Message
) -> None:
    """The check and its outcome (the answer's one-line text) in the episode's on-call events, for its
    resolution summary; a redelivered press records nothing twice. A store failure loses only the record."""
    if group.first_firing_at is None:
        return
    outcome = truncate(one_line(answer.text), CHECK_OUTCOME_CHARS)
    event = OncallEvent(
        f"check:{group.channel}:{pressed.revision}",
        group.channel,
        group.group_key,
        group.first_firing_at,
        kind,
        deps.now().timestamp(),
        pressed.user_name,  # named in the summary, never mentioned (a mention there would notify)
        outcome,
    )
    try:
        await deps.groups.record_event(event)
    except StoreError as err:
        log.warning(
            "the %s pressed on %s was not recorded for its summary: %s", kind.value, group.group_key, err
        )


def _check_allowed(settings: Settings, pressed: Pressed) -> tuple[ClusterSettings, TargetSettings]:
    ref = pressed.ref
    if ref.target is None or ref.cluster is None:
        raise Refused(
            "This alert group spans several targets or clusters: use `/proxy` with a target instead."
        )
    cluster = settings.cluster(ref.cluster)
    target = None if cluster is None else cluster.target(ref.target)
    if cluster is None or target is None:
        raise Refused(
            f"Target {code(ref.target)} of cluster {code(ref.cluster)} is not in proxybot's configuration."
        )
    if not settings.may_query(cluster.name, pressed.who):
        raise Refused(
            f"This channel may not query cluster {code(cluster.name)} (see `access` in the configuration)."
        )
    return cluster, target


async def _group_of(groups: GroupStore, wanted: str, where: Requester) -> AlertGroupState | None:
    # Group ids are hashes of group keys, so the store is scanned; it holds one row per live group.
    return drawn_group(await groups.groups(), wanted, where)


async def _in_thread(
    deps: ActionDeps,
    respond: AsyncRespond,
    pressed: Pressed,
    group: AlertGroupState | None,
    answer: Message,
) -> None:
    """Queue the answer as a reply in the alert's thread; when it cannot be queued (no outbox, the group
    is gone, the store failed), give it to the person who pressed instead."""
    why = "proxybot no longer knows this alert's message" if group is None else "proxybot has no outbox"
    if group is not None and deps.replies is not None:
        try:
            await deps.replies.reply(group.channel, group.group_key, answer, pressed.revision)
            return
        except StoreError as err:
            log.error("could not queue a button's answer for the thread in %s: %s", group.channel, err)
            why = "proxybot could not queue it"
    note = context([f"Not posted in the alert's thread: {why}."])
    await say(respond, message(answer.text, answer.blocks or [section(answer.text)], [note]))
