"""The buttons on alert messages: *Silence…* (a modal: a duration and a required comment, its submission
checked by `handlers.silence_form`), *Acknowledge* / *Unacknowledge* (`handlers.acknowledge`) when an outbox
is given, and *Probe now* / *Path check* when their checks are given.

Each button is acknowledged at once (bolt's `ack` listener) and its work runs after, as a bolt lazy
listener, so a slow Alertmanager or cluster never delays the ack. Every outcome is answered: refusals and
failures ephemerally to the person who pressed (through `response_url`), results in the alert's thread.
A thread answer is a reply in the delivery outbox like every other Slack operation (paced, 429s and
Slack's failures retried, kept across a restart), keyed by the press so a redelivered press adds none.
A failure is a sentence naming what failed, never a stack trace and never silence.

The button value is an `ActionRef` (validated cluster, target and group id); nothing else from the payload
is trusted beyond the Slack user and channel ids that bolt has verified with the request's signature.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from bot.alerts.incident import members_of
from bot.alerts.silences import SilenceWatch, covering
from bot.clients.slack import SlackError, SlackRejected
from bot.domain.messages import ActionRef, group_id
from bot.domain.resolution import EventKind, OncallEvent
from bot.domain.silences import Matcher, Silence, group_labels_from_key, matchers_for
from bot.errors import InputError, Refused
from bot.ports import Silences
from bot.render.acknowledge import mention
from bot.render.blocks import Message, code, context, message, one_line, section, text_message, truncate
from bot.render.silence_modal import CALLBACK_ID as SILENCE_FORM
from bot.render.silence_modal import broader_left, open_failed, silence_modal, silenced_reply
from bot.render.slack import (
    ACTION_ACK,
    ACTION_EXPIRE_SILENCE,
    ACTION_PATH,
    ACTION_PROBE,
    ACTION_SILENCE,
    ACTION_UNACK,
    LINK_ACTION_PREFIX,
)
from bot.store.base import GroupStore
from bot.store.errors import StoreError
from bot.store.models import AlertGroupState
from config.clusters import ClusterSettings, TargetSettings
from config.settings import Requester, Settings
from handlers.acknowledge import Acknowledger, firing_carrier, may_acknowledge
from handlers.command_access import silence_refusal
from handlers.respond import Asked, answering, say
from handlers.silence_form import FormErrors, SilenceForm, create_silences, read_form

log = logging.getLogger(__name__)

# The labels that say which alert a silence is about; a cluster's `match` labels are added to them.
# What a silence made from an alert matches: never a replica's own labels (`pod`, `instance`), so the
# other replicas of an HA client are silenced with the one that fired first.
IDENTIFYING_LABELS = ("alertname", "target", "cluster", "group_version")
PROBE_LABELS = ("namespace", "cronjob")
# How much of a check's answer its on-call record keeps (the resolution summary's line for it).
CHECK_OUTCOME_CHARS = 200

# A button's check: runs against one configured target of one cluster, returns the answer to post.
Check = Callable[[ClusterSettings, TargetSettings], Awaitable[Message]]


@dataclass(frozen=True)
class ButtonChecks:
    """The checks behind *Probe now* and *Path check*; a button is only registered when its check is."""

    probe: Check | None = None
    path: Check | None = None


class ViewOpener(Protocol):
    """Slack's views.open (`bot.clients.slack.SlackClient` is one)."""

    async def open_view(self, trigger_id: str, view: Mapping[str, Any]) -> None: ...


class ThreadReplies(Protocol):
    """The outbox's side of the buttons (`bot.delivery.worker.Delivery` is one)."""

    async def reply(self, channel: str, group_key: str, message: Message, revision: str) -> object: ...


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


def register(app: AsyncApp, deps: ActionDeps) -> None:
    """Add the buttons' listeners to `app`: always *Silence…* and its modal, the checks only when given."""
    app.action(ACTION_SILENCE)(ack=_ack, lazy=[_silence_listener(deps)])
    app.view(SILENCE_FORM)(_silence_submission(deps))
    app.action(ACTION_EXPIRE_SILENCE)(ack=_ack, lazy=[_expire_listener(deps)])
    # Link buttons (graph, silence page) open their page in the browser; Slack still wants the press acked.
    app.action(re.compile(f"^{re.escape(LINK_ACTION_PREFIX)}"))(_ack)
    if deps.acks is not None:
        for action_id, take in ((ACTION_ACK, True), (ACTION_UNACK, False)):
            app.action(action_id)(ack=_ack, lazy=[_ack_listener(deps, deps.acks, take=take)])
    for action_id, verb, check, kind in (
        (ACTION_PROBE, "Probing", deps.checks.probe, EventKind.PROBE),
        (ACTION_PATH, "Checking the path to", deps.checks.path, EventKind.PATH_CHECK),
    ):
        if check is not None:
            app.action(action_id)(ack=_ack, lazy=[_check_listener(deps, verb, check, kind)])


async def _ack(ack: AsyncAck) -> None:
    await ack()


# -- the pressed button --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pressed:
    """A button press as the handlers use it: who, where, which alert, and which press."""

    action_id: str
    ref: ActionRef
    who: Requester
    user_name: str
    press: str  # this press, as Slack stamps it (`action_ts`): the same on a redelivery

    @property
    def revision(self) -> str:
        """The outbox revision of this press's thread answer."""
        return f"button:{self.action_id}:{self.who.user}:{self.press}"

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Pressed:
        """Read a `block_actions` payload; InputError when it is not one of our buttons' shape."""
        try:
            action = body["actions"][0]
            user, channel = body["user"], body["channel"]
            who = Requester(
                user=str(user["id"]),
                channel_id=str(channel["id"]),
                channel_name=channel.get("name"),
                direct_message=channel.get("name") == "directmessage" or str(channel["id"]).startswith("D"),
            )
            name = str(user.get("username") or user.get("name") or user["id"])
            ref = ActionRef.decode(str(action["value"]))
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise InputError("the button press is missing fields") from exc
        press = str(action.get("action_ts") or body.get("trigger_id") or "")
        if not press:
            raise InputError("the button press carries neither action_ts nor trigger_id")
        return cls(str(action["action_id"]), ref, who, name, press)


# -- Silence… (a modal: duration and a required comment) --------------------------------------------


def _silence_listener(deps: ActionDeps) -> Callable[..., Awaitable[None]]:
    async def open_silence_form(body: dict[str, Any], respond: AsyncRespond) -> None:
        trigger = str(body.get("trigger_id") or "")
        await _answering(respond, "silence", lambda pressed: _open_form(deps, pressed, trigger), body)

    return open_silence_form


async def _open_form(deps: ActionDeps, pressed: Pressed, trigger_id: str) -> None:
    """views.open of the silence modal, at once and directly (Slack takes the trigger for 3 s only)."""
    cluster = _silence_allowed(deps, pressed)
    if deps.silencer is None:
        raise Refused("proxybot cannot silence: `alertmanager.url` is not set in its configuration.")
    if deps.views is None or not trigger_id:
        raise Refused("proxybot cannot open the silence form here: silence it with `/proxy silence`.")
    known = await deps.groups.groups()
    group = _find_group(known, pressed.ref.group, pressed.who)
    _of_cluster(deps.settings, group, cluster)
    every = _every_silence(known, group, pressed.ref, cluster)
    ref, who = pressed.ref, pressed.who
    form = SilenceForm(ref.group, cluster.name, ref.target, who.user, who.channel_id, who.channel_name)
    metadata = form.sign(_secret(deps.settings), deps.now().timestamp())
    shown = [str(m) for _, matchers in every for m in matchers]
    view = silence_modal(_form_subject(pressed.ref), shown, metadata, deps.settings.access.silence_max)
    try:
        await deps.views.open_view(trigger_id, view)
    except SlackRejected as err:
        raise Refused(open_failed(err.error_code)) from None
    except SlackError as err:
        raise Refused(open_failed(type(err).__name__)) from None


def _every_silence(
    known: list[AlertGroupState], group: AlertGroupState, ref: ActionRef, cluster: ClusterSettings
) -> list[tuple[AlertGroupState, tuple[Matcher, ...]]]:
    # An incident's message silences the groups that joined it too: one silence per group, all
    # matchers checked before any is made.
    return [(one, silence_matchers(one, ref, cluster)) for one in [group, *members_of(group, known)]]


def _form_subject(ref: ActionRef) -> str:
    return f"the alerts of {ref.target}" if ref.target else "this alert group"


def _secret(settings: Settings) -> str:
    secret = settings.slack.signing_secret
    return "" if secret is None else secret.get_secret_value()


def _silence_submission(deps: ActionDeps) -> Callable[..., Awaitable[None]]:
    async def submit_silence_form(ack: AsyncAck, body: dict[str, Any]) -> None:
        try:
            made = await _silence_from_form(deps, body)
        except FormErrors as problems:
            log.info("silence form refused: %s", problems.errors)
            await ack(response_action="errors", errors=problems.errors)
            return
        except Exception:  # the person gets a sentence, the log the traceback; nothing was silenced
            log.exception("the silence form failed")
            failed = FormErrors.on_comment("The silence failed on proxybot's side; the error is in its log.")
            await ack(response_action="errors", errors=failed.errors)
            return
        await ack()
        await _thread_line(deps, *made)

    return submit_silence_form


async def _silence_from_form(
    deps: ActionDeps, body: Mapping[str, Any]
) -> tuple[AlertGroupState, Message, str]:
    """The silences the submitted form asks for, made; FormErrors (shown in the modal) when nothing was."""
    view = body.get("view") or {}
    user = body.get("user") or {}
    who_id, name = str(user.get("id") or ""), str(user.get("username") or user.get("name") or user.get("id"))
    now = deps.now()
    form = SilenceForm.verify(
        str(view.get("private_metadata") or ""), _secret(deps.settings), now.timestamp(), who_id
    )
    span, comment = read_form((view.get("state") or {}).get("values") or {}, deps.settings.access.silence_max)
    direct = form.channel_name == "directmessage" or form.channel.startswith("D")
    who = Requester(who_id, form.channel, form.channel_name, direct)
    ref = ActionRef(form.cluster, form.target, form.group)
    cluster = deps.settings.cluster(form.cluster)
    if cluster is None or not deps.settings.may_silence(cluster.name, who):
        raise FormErrors.on_comment(silence_refusal(deps.settings, form.cluster, who))
    if deps.silencer is None:
        raise FormErrors.on_comment("proxybot cannot silence: `alertmanager.url` is not set.")
    known = await deps.groups.groups()
    group = drawn_group(known, form.group, who)
    if group is None:
        raise FormErrors.on_comment("This alert is no longer tracked by proxybot: nothing was silenced.")
    try:
        _of_cluster(deps.settings, group, cluster)
    except Refused as refused:
        raise FormErrors.on_comment(str(refused)) from None
    every = _every_silence(known, group, ref, cluster)
    ends = now + timedelta(seconds=span)
    made = await create_silences(deps.silencer, every, now, ends, f"{name} (Slack {who_id})", comment)
    log.info("silences %s created by %s for group %s", made, who_id, form.group)
    lines = [f"silence {code(sid)}: {', '.join(code(m) for m in matchers)}" for sid, matchers in made]
    return group, silenced_reply(who_id, ends, span, comment, lines), f"silence:{made[0][0]}"


def _expire_listener(deps: ActionDeps) -> Callable[..., Awaitable[None]]:
    async def expire_silence(body: dict[str, Any], respond: AsyncRespond) -> None:
        await _answering(respond, "expiry", lambda pressed: _expire(deps, pressed, respond), body)

    return expire_silence


async def _expire(deps: ActionDeps, pressed: Pressed, respond: AsyncRespond) -> None:
    """*Expire silence*: expire the active silences that are the message's groups' own (the one proxybot
    makes for a group, or one naming its target exactly); a broader one that also covers them (a whole
    cluster's, made in Alertmanager's UI) is left alone, and named to the person who pressed."""
    cluster = _silence_allowed(deps, pressed)
    if deps.silencer is None:
        raise Refused("proxybot cannot expire silences: `alertmanager.url` is not set in its configuration.")
    known = await deps.groups.groups()
    group = _find_group(known, pressed.ref.group, pressed.who)
    _of_cluster(deps.settings, group, cluster)
    listed = await deps.silencer.silences()
    found: dict[str, Silence] = {}
    broader: dict[str, Silence] = {}
    for one, matchers in _every_silence(known, group, pressed.ref, cluster):
        for s in covering(listed, one.facts.firing_labels):
            if s.state == "active":
                (found if _own(s, one, matchers, pressed.ref) else broader)[s.id] = s
    broader = {k: v for k, v in broader.items() if k not in found}
    if not found:
        nothing = "No active silence covers this alert any more: nothing to expire."
        raise Refused(broader_left(broader.values()) if broader else nothing)
    for silence in found:
        await deps.silencer.expire_silence(silence)
    log.info("silences %s expired by %s for group %s", sorted(found), pressed.who.user, pressed.ref.group)
    if deps.watch is not None:
        deps.watch.soon()
    ids = ", ".join(code(s) for s in sorted(found))
    line = text_message(f"🔔 {mention(pressed.who.user)} expired the silence of this alert ({ids}).")
    await _thread_line(deps, group, line, f"expire:{pressed.who.user}:{pressed.press}")
    if broader:
        await _ephemeral(respond, f"Expired {ids}. " + broader_left(broader.values()))


def _own(silence: Silence, group: AlertGroupState, matchers: tuple[Matcher, ...], ref: ActionRef) -> bool:
    """Whether a silence is the group's own: the matchers proxybot makes for it, or its target named
    exactly (`target="..."`, as `/proxy silence` and most hand-made ones do)."""
    if set(silence.matchers) == set(matchers):
        return True
    targets = {labels["target"] for labels in group.facts.firing_labels if "target" in labels}
    if not targets and ref.target is not None:
        targets = {ref.target}
    return any(Matcher("target", target) in silence.matchers for target in targets)


async def _thread_line(deps: ActionDeps, group: AlertGroupState, line: Message, revision: str) -> None:
    if deps.watch is not None:
        deps.watch.soon()  # the message shows the change at the next read, seconds from now
    if deps.replies is None:
        return
    try:
        await deps.replies.reply(group.channel, group.group_key, line, revision)
    except StoreError as err:
        log.error("could not queue the silence's thread line in %s: %s", group.channel, err)


def _silence_allowed(deps: ActionDeps, pressed: Pressed) -> ClusterSettings:
    name = pressed.ref.cluster
    cluster = None if name is None else deps.settings.cluster(name)
    if cluster is None:
        raise Refused(
            "This alert group is not tied to one configured cluster, so proxybot cannot check who may "
            "silence it: silence it in Alertmanager instead."
        )
    if not deps.settings.may_silence(cluster.name, pressed.who):
        raise Refused(silence_refusal(deps.settings, cluster.name, pressed.who))
    return cluster


def drawn_group(known: Iterable[AlertGroupState], wanted: str, where: Requester) -> AlertGroupState | None:
    """The group a button was drawn for: its id, in the channel the press (or the modal) came from.

    One Alertmanager group key can be routed to several channels (a rule without the `cluster` and
    `target` labels groups alerts of several clients), each with a row and a message of its own; a group's
    id alone would find another channel's row, and its alerts would be silenced or acknowledged."""
    return next((g for g in known if group_id(g.group_key) == wanted and _drawn_in(g, where)), None)


def _drawn_in(group: AlertGroupState, where: Requester) -> bool:
    if group.channel_id is not None:  # the channel Slack posted its message in
        return group.channel_id == where.channel_id
    return group.channel in where.channel_refs()  # not posted yet: the channel it was routed to


def _of_cluster(settings: Settings, group: AlertGroupState, cluster: ClusterSettings) -> None:
    """Refused when one of the group's firing alerts belongs to another cluster than the button's (whose
    access was checked): a silence made from its labels would mute that cluster's alerts too."""
    for labels in group.facts.firing_labels:
        owner = settings.cluster_for_alert(labels)
        if owner is not None and owner.name != cluster.name:
            raise Refused(
                f"This alert group also holds alerts of cluster {code(owner.name)}, not only of "
                f"{code(cluster.name)}: silence it in Alertmanager with narrower matchers."
            )


def _find_group(known: list[AlertGroupState], wanted: str, where: Requester) -> AlertGroupState:
    found = drawn_group(known, wanted, where)
    if found is None:
        raise Refused(
            "proxybot no longer knows this alert group (it was cleaned up): silence it in Alertmanager."
        )
    return found


async def _group_of(groups: GroupStore, wanted: str, where: Requester) -> AlertGroupState | None:
    # Group ids are hashes of group keys, so the store is scanned; it holds one row per live group.
    return drawn_group(await groups.groups(), wanted, where)


def silence_matchers(group: AlertGroupState, ref: ActionRef, cluster: ClusterSettings) -> tuple[Matcher, ...]:
    """Matchers for the group's alerts: from their stored labels, else from the group key and the button.

    Refused when they would not name the target or the cluster: such a silence would mute the alert on
    every cluster of the fleet.
    """
    # The labels the alert side kept of the group's firing alerts; without them (a group saved before
    # they were kept), the group's labels are read back from its Alertmanager group key.
    stored = group.facts.firing_labels
    if stored:
        # A failing probe is labelled by the CronJob and the namespace of the cluster it probes.
        probe = PROBE_LABELS if all("cronjob" in labels for labels in stored) else ()
        names = {*IDENTIFYING_LABELS, *cluster.match, *probe}
        found = matchers_for(stored, names)
    else:
        labels = group_labels_from_key(group.group_key)
        if ref.target is not None:
            labels.setdefault("target", ref.target)
        found = matchers_for([labels], labels)
    named = {m.name for m in found}
    if not (named & {"target", *cluster.match} or named >= set(PROBE_LABELS)):
        raise Refused(
            "This alert group's labels name neither its target nor its cluster, so a silence would mute it "
            "everywhere: silence it in Alertmanager with narrower matchers."
        )
    return found


# -- Acknowledge / Unacknowledge -------------------------------------------------------------------------


def _ack_listener(deps: ActionDeps, acks: Acknowledger, *, take: bool) -> Callable[..., Awaitable[None]]:
    async def acknowledge_alert(body: dict[str, Any], respond: AsyncRespond) -> None:
        async def run(pressed: Pressed) -> None:
            may_acknowledge(deps.settings, pressed.ref.cluster, pressed.who)
            known = await deps.groups.groups()
            carrier = firing_carrier(drawn_group(known, pressed.ref.group, pressed.who), known)
            # The message's edit and its thread line say it; the person who pressed is told only of a refusal.
            if take:
                await acks.acknowledge(carrier, pressed.who.user, pressed.user_name, pressed.press)
            else:
                await acks.unacknowledge(carrier, pressed.who.user, pressed.press)

        await _answering(respond, "acknowledgement", run, body)

    return acknowledge_alert


# -- Probe now / Path check ----------------------------------------------------------------------------


def _check_listener(
    deps: ActionDeps, verb: str, check: Check, kind: EventKind
) -> Callable[..., Awaitable[None]]:
    async def run_button_check(body: dict[str, Any], respond: AsyncRespond) -> None:
        async def run(pressed: Pressed) -> None:
            cluster, target = _check_allowed(deps.settings, pressed)
            await _ephemeral(respond, f"{verb} {code(target.name)}…")
            answer = await check(cluster, target)
            group = await _group_of(deps.groups, pressed.ref.group, pressed.who)
            await _in_thread(deps, respond, pressed, group, answer)
            if group is not None:
                await _record_check(deps, pressed, group, kind, answer)

        await _answering(respond, "check", run, body)

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


# -- answering -----------------------------------------------------------------------------------------


async def _answering(
    respond: AsyncRespond, what: str, work: Callable[[Pressed], Awaitable[None]], body: Mapping[str, Any]
) -> None:
    """Run a button's work; every way it can end is answered to the person who pressed."""
    user = (body.get("user") or {}).get("id")
    where = (body.get("channel") or {}).get("id")
    asked = Asked(
        f"The {what}", f"{what} by {user} in {where}", "This button cannot be used: {}.", log, logging.WARNING
    )

    async def pressed() -> None:
        await work(Pressed.from_body(body))

    await answering(respond, asked, pressed)


async def _ephemeral(respond: AsyncRespond, text: str) -> None:
    await say(respond, text_message(text))


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
