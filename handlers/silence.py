"""Silence: the *Silence…* button and its modal, *Expire silence*, and `/proxy silence`.

*Silence…* opens a modal (a duration and a required comment) at once, by the replica that got the press
(Slack takes its `trigger_id` for 3 s only). Nothing in its submission is believed unchecked: its
`private_metadata` carries the group, cluster, target and channel of the message it was opened from and the
user who opened it, signed (`bot.domain.modal_token`); a submission by another user, or with metadata
proxybot did not sign, makes nothing. A submission makes one silence per group the message shows, from the
labels of its alerts (`silence_matchers`), or shows its field errors in the modal (`response_action:
errors`); Alertmanager is given `ANSWER_WITHIN` seconds, since Slack closes the modal's request after 3.
*Expire silence* expires the silences that are the message's groups' own. Each is said in the alert's
thread, through the outbox.

`/proxy silence TARGET [DURATION] [--reason ...]`, `silence list`, `silence expire ID`: a silence names
exactly one configured target (`target="<project>/<name>"`, the label every proxy alert carries), so it
mutes that target's alerts and nothing else. Creating and expiring need `access.silencers` and a grant for
the target's cluster; listing shows only silences about clusters the asker may query. Alertmanager's
answers (unreachable, refusing) come back as `UpstreamError`s with a clear sentence.

Every silence is made, listed and expired through `bot.ports.Silences` (`bot.silence_makers.MadeSilences`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Self

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from bot.alerts.incident import members_of
from bot.alerts.silences import SilenceWatch, covering
from bot.clients.slack import SlackError, SlackRejected
from bot.domain import durations, modal_token
from bot.domain.messages import ActionRef
from bot.domain.silences import Matcher, NewSilence, Silence, group_labels_from_key, matchers_for, silence_id
from bot.errors import InputError, Refused, UpstreamError, shown
from bot.ports import Silences, ThreadReplies, ViewOpener
from bot.reads.context import resolve_target
from bot.render.acknowledge import mention
from bot.render.blocks import (
    Message,
    code,
    esc,
    fmt_span,
    fmt_time,
    message,
    section,
    section_lines,
    text_message,
)
from bot.render.silence_modal import (
    CALLBACK_ID as SILENCE_FORM,
)
from bot.render.silence_modal import (
    COMMENT_BLOCK,
    CUSTOM,
    CUSTOM_BLOCK,
    DURATION_BLOCK,
    MAX_COMMENT,
    PRESETS,
    broader_left,
    open_failed,
    silence_modal,
    silenced_reply,
    typed,
)
from bot.render.slack import ACTION_EXPIRE_SILENCE, ACTION_SILENCE
from bot.store.base import GroupStore
from bot.store.errors import StoreError
from bot.store.models import AlertGroupState
from config.clusters import ClusterSettings
from config.settings import Requester, Settings
from handlers.command_access import queryable, silence_refusal
from handlers.command_args import Invocation, parse_duration
from handlers.pressed import Pressed, answer_press, answer_slack, drawn_group, ephemeral

log = logging.getLogger(__name__)

# The labels that say which alert a silence is about; a cluster's `match` labels are added to them.
# What a silence made from an alert matches: never a replica's own labels (`pod`, `instance`), so the
# other replicas of an HA client are silenced with the one that fired first.
IDENTIFYING_LABELS = ("alertname", "target", "cluster", "group_version")
PROBE_LABELS = ("namespace", "cronjob")
ANSWER_WITHIN = 2.0  # seconds Alertmanager has to make a modal's silences
MIN_SPAN = 60
DEFAULT_DURATION = "1h"  # of `/proxy silence TARGET`
MAX_LISTED = 20
_LIVE_STATES = ("active", "pending")
Work = Callable[[], Awaitable[Message]]


@dataclass(frozen=True)
class SilenceDeps:
    """What the silence buttons use (`handlers.actions.ActionDeps` gives it): `silencer` None when
    `alertmanager.url` is not set, `replies` None without an outbox, `views` the Slack client's views.open."""

    settings: Settings
    groups: GroupStore
    silencer: Silences | None
    now: Callable[[], datetime]
    replies: ThreadReplies | None
    views: ViewOpener | None
    watch: SilenceWatch | None  # Alertmanager's silences as messages show them; told of changes


def register(app: AsyncApp, deps: SilenceDeps) -> None:
    """Add *Silence…*, its modal's submission and *Expire silence* to `app`."""
    app.action(ACTION_SILENCE)(ack=answer_slack, lazy=[_silence_listener(deps)])
    app.view(SILENCE_FORM)(_silence_submission(deps))
    app.action(ACTION_EXPIRE_SILENCE)(ack=answer_slack, lazy=[_expire_listener(deps)])


# -- Silence… (a modal: duration and a required comment) and Expire silence ------------------------------


def _silence_listener(deps: SilenceDeps) -> Callable[..., Awaitable[None]]:
    async def open_silence_form(body: dict[str, Any], respond: AsyncRespond) -> None:
        trigger = str(body.get("trigger_id") or "")
        await answer_press(respond, "silence", lambda pressed: _open_form(deps, pressed, trigger), body, log)

    return open_silence_form


async def _open_form(deps: SilenceDeps, pressed: Pressed, trigger_id: str) -> None:
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


def _silence_submission(deps: SilenceDeps) -> Callable[..., Awaitable[None]]:
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
    deps: SilenceDeps, body: Mapping[str, Any]
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


def _expire_listener(deps: SilenceDeps) -> Callable[..., Awaitable[None]]:
    async def expire_silence(body: dict[str, Any], respond: AsyncRespond) -> None:
        await answer_press(respond, "expiry", lambda pressed: _expire_own(deps, pressed, respond), body, log)

    return expire_silence


async def _expire_own(deps: SilenceDeps, pressed: Pressed, respond: AsyncRespond) -> None:
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
        await ephemeral(respond, f"Expired {ids}. " + broader_left(broader.values()))


def _own(silence: Silence, group: AlertGroupState, matchers: tuple[Matcher, ...], ref: ActionRef) -> bool:
    """Whether a silence is the group's own: the matchers proxybot makes for it, or its target named
    exactly (`target="..."`, as `/proxy silence` and most hand-made ones do)."""
    if set(silence.matchers) == set(matchers):
        return True
    targets = {labels["target"] for labels in group.facts.firing_labels if "target" in labels}
    if not targets and ref.target is not None:
        targets = {ref.target}
    return any(Matcher("target", target) in silence.matchers for target in targets)


async def _thread_line(deps: SilenceDeps, group: AlertGroupState, line: Message, revision: str) -> None:
    if deps.watch is not None:
        deps.watch.soon()  # the message shows the change at the next read, seconds from now
    if deps.replies is None:
        return
    try:
        await deps.replies.reply(group.channel, group.group_key, line, revision)
    except StoreError as err:
        log.error("could not queue the silence's thread line in %s: %s", group.channel, err)


def _silence_allowed(deps: SilenceDeps, pressed: Pressed) -> ClusterSettings:
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


# -- the modal's submission: what it names, what was typed, the silences it makes -----------------------


class FormErrors(Exception):
    """Field errors for the modal, by block id: nothing was silenced."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        super().__init__(", ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = dict(errors)

    @classmethod
    def on_comment(cls, text: str) -> FormErrors:
        """An error about the whole form, shown under its last field."""
        return cls({COMMENT_BLOCK: text})


@dataclass(frozen=True)
class SilenceForm:
    """What a silence modal was opened for, signed into its `private_metadata`."""

    group: str
    cluster: str
    target: str | None
    user: str
    channel: str
    channel_name: str | None = None  # where it was opened, as access names channels (`#alerts`)

    def sign(self, secret: str, now: float) -> str:
        fields = {"g": self.group, "c": self.cluster, "t": self.target, "u": self.user, "ch": self.channel}
        return modal_token.sign({**fields, "cn": self.channel_name}, secret, now)

    @classmethod
    def verify(cls, metadata: str, secret: str, now: float, submitter: str) -> Self:
        """The form as proxybot opened it for `submitter`; FormErrors for anything else."""
        try:
            fields = modal_token.verify(metadata, secret, now)
            group, cluster, user, channel = (str(fields[k]) for k in ("g", "c", "u", "ch"))
            form = cls(group, cluster, fields.get("t"), user, channel, fields.get("cn"))
        except (InputError, KeyError, ValueError, TypeError) as err:
            raise FormErrors.on_comment(f"This form cannot be used ({err}): nothing was silenced.") from None
        if form.user != submitter:
            raise FormErrors.on_comment("This form was opened by someone else: nothing was silenced.")
        return form


def read_form(values: Mapping[str, Any], longest: float) -> tuple[float, str]:
    """(seconds, comment) as typed; FormErrors naming each field that is wrong."""
    errors: dict[str, str] = {}
    comment = typed(values, COMMENT_BLOCK)
    if not comment:
        errors[COMMENT_BLOCK] = "Say why: the comment is shown on the alert and in Alertmanager."
    elif len(comment) > MAX_COMMENT:  # Slack's client stops at it; a crafted submission need not
        errors[COMMENT_BLOCK] = f"Keep it to {MAX_COMMENT} characters (this one has {len(comment)})."
    span = _span(values, longest, errors)
    if errors:
        raise FormErrors(errors)
    return span, comment


def _span(values: Mapping[str, Any], longest: float, errors: dict[str, str]) -> float:
    chosen, custom = typed(values, DURATION_BLOCK), typed(values, CUSTOM_BLOCK)
    if chosen == CUSTOM or (custom and chosen not in PRESETS):
        text, block = custom, CUSTOM_BLOCK
        if not text:
            errors[CUSTOM_BLOCK] = "Type a duration, like 2h30m or 3d."
            return 0.0
    elif chosen in PRESETS:
        text, block = chosen, DURATION_BLOCK
    else:
        errors[DURATION_BLOCK] = "Choose how long."
        return 0.0
    try:
        return float(durations.parse_duration(text, field="duration", low=MIN_SPAN, high=int(longest)))
    except InputError as err:
        errors[block] = f"{err} (at most {fmt_span(longest)}, `access.silence_max`)."
        return 0.0


async def create_silences(
    silencer: Silences,
    every: Sequence[tuple[AlertGroupState, tuple[Matcher, ...]]],
    starts: datetime,
    ends: datetime,
    created_by: str,
    comment: str,
) -> list[tuple[str, tuple[Matcher, ...]]]:
    """One silence per group, within `ANSWER_WITHIN`; FormErrors when Alertmanager did not make them.

    Alertmanager is asked first for the silences it has: one with the same matchers, author and comment
    (made by a try whose answer never came) is taken as made, not made twice."""
    made: list[tuple[str, tuple[Matcher, ...]]] = []
    try:
        async with asyncio.timeout(ANSWER_WITHIN):
            listed = await silencer.silences()
            for _, matchers in every:
                wanted = NewSilence(matchers, starts, ends, created_by, comment)
                silence = next((s.id for s in listed if wanted.made_as(s)), None)
                if silence is None:
                    silence = await silencer.create_silence(wanted)
                made.append((silence, matchers))
    except TimeoutError:
        done = f"{len(made)} of {len(every)} silences were made, and the next" if made else "the silence"
        raise FormErrors.on_comment(
            f"Alertmanager did not answer within {ANSWER_WITHIN:g} s: {done} may have been made. Submit "
            "again: proxybot looks for it first and makes only what is missing."
        ) from None
    except UpstreamError as err:
        done = f" ({len(made)} of {len(every)} silences were made)" if made else ": nothing was silenced"
        raise FormErrors.on_comment(f"Alertmanager refused or failed: {err}{done}. Try again.") from None
    return made


# -- /proxy silence --------------------------------------------------------------------------------------


def plan_silence(
    settings: Settings,
    silences: Silences | None,
    inv: Invocation,
    who: Requester,
    user_name: str,
    now: Callable[[], datetime],
) -> Work:
    """The work of one `silence` form, validated; Refused when Alertmanager is not set or not allowed."""
    if silences is None:
        raise Refused("proxybot cannot silence: `alertmanager.url` is not set in its configuration.")
    first = (inv.arg(0) or "").lower()
    if first == "list":
        _no_second(inv, "list")
        return lambda: _list(settings, silences, who)
    if first == "expire":
        wanted = silence_id(inv.arg(1) or "")
        return lambda: _expire_listed(settings, silences, who, wanted)
    return _planned_silence(settings, silences, inv, who, user_name, now)


def _no_second(inv: Invocation, form: str) -> None:
    if inv.arg(1) is not None:
        raise InputError(f"silence {form}: unexpected {shown(inv.arg(1) or '')}")


def _planned_silence(
    settings: Settings,
    silences: Silences,
    inv: Invocation,
    who: Requester,
    user_name: str,
    now: Callable[[], datetime],
) -> Work:
    ref = resolve_target(settings, inv.arg(0) or "", queryable(settings, who))
    cluster, target = ref.cluster, ref.target
    if not settings.may_silence(cluster.name, who):
        raise Refused(silence_refusal(settings, cluster.name, who))
    duration = timedelta(seconds=parse_duration(inv.arg(1) or DEFAULT_DURATION))
    reason = inv.one("--reason") or f"silenced from Slack with /proxy by {user_name}"
    matchers = (Matcher("target", target.name),)

    async def work() -> Message:
        start = now()
        by = f"{user_name} (Slack {who.user})"
        made = await silences.create_silence(NewSilence(matchers, start, start + duration, by, reason))
        until = fmt_time(start + duration)
        text = (
            f"Silenced {code(matchers[0])} until {until} (silence {code(made)}), reason: {esc(reason)}. "
            f"Undo with `/proxy silence expire {made}`."
        )
        return text_message(text)

    return work


def clusters_of(silence: Silence, settings: Settings) -> set[str]:
    """The configured clusters a silence is about: by a `target` matcher, or a cluster's `match` labels."""
    found: set[str] = set()
    for cluster in settings.clusters:
        for m in silence.matchers:
            if not m.is_equal:
                continue
            by_target = m.name == "target" and any(_fits(m, t.name) for t in cluster.targets)
            by_match = m.name in cluster.match and _fits(m, cluster.match[m.name])
            if by_target or by_match:
                found.add(cluster.name)
    return found


def _fits(matcher: Matcher, value: str) -> bool:
    if not matcher.is_regex:
        return matcher.value == value
    try:
        return re.fullmatch(matcher.value, value) is not None
    except re.error:  # RE2 syntax Python does not read: not shown rather than guessed
        return False


async def _list(settings: Settings, silences: Silences, who: Requester) -> Message:
    live = [s for s in await silences.silences() if s.state in _LIVE_STATES]
    mine = [s for s in live if any(settings.may_query(c, who) for c in clusters_of(s, settings))]
    if not mine:
        return text_message("No active or pending silence concerns the clusters you may query here.")
    lines = [_silence_line(s) for s in sorted(mine, key=lambda s: s.ends_at)[:MAX_LISTED]]
    if len(mine) > MAX_LISTED:
        lines.append(f"… and {len(mine) - MAX_LISTED} more")
    noun = "silence concerns" if len(mine) == 1 else "silences concern"
    head = f"{len(mine)} {noun} the clusters you may query"
    return message(head, [section(f"*{head}*"), section_lines(lines)])


def _silence_line(s: Silence) -> str:
    matchers = ", ".join(code(m) for m in s.matchers)
    return (
        f"• {code(s.id)} {s.state} until {fmt_time(s.ends_at)}: {matchers} — "
        f"{esc(s.created_by)}: {esc(s.comment)}"
    )


async def _expire_listed(settings: Settings, silences: Silences, who: Requester, wanted: str) -> Message:
    found = next((s for s in await silences.silences() if s.id == wanted), None)
    clusters = set() if found is None else clusters_of(found, settings)
    if found is None or not any(settings.may_query(c, who) for c in clusters):
        raise InputError(f"no silence {wanted} concerns a cluster you may query here")
    refused = sorted(c for c in clusters if not settings.may_silence(c, who))
    if refused:
        raise Refused(silence_refusal(settings, refused[0], who))
    if found.state not in _LIVE_STATES:
        return text_message(f"Silence {code(wanted)} is already {esc(found.state)}.")
    await silences.expire_silence(wanted)
    return text_message(f"Expired silence {code(wanted)}: " + ", ".join(code(m) for m in found.matchers))
