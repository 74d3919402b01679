"""`/proxy silence TARGET [DURATION] [--reason ...]`, `silence list`, `silence expire ID`.

A silence names exactly one configured target (`target="<project>/<name>"`, the label every proxy alert
carries), so it mutes that target's alerts and nothing else. Creating and expiring need `access.silencers`
and a grant for the target's cluster; listing shows only silences about clusters the asker may query.
Alertmanager's answers (unreachable, refusing) come back as `UpstreamError`s with a clear sentence.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from bot.domain.silences import Matcher, NewSilence, Silence, silence_id
from bot.errors import InputError, Refused, shown
from bot.ports import Silences
from bot.reads.context import resolve_target
from bot.render.blocks import Message, code, esc, fmt_time, message, section, section_lines, text_message
from config.settings import Requester, Settings
from handlers.command_access import queryable, silence_refusal
from handlers.command_args import Invocation, parse_duration

DEFAULT_DURATION = "1h"
MAX_LISTED = 20
_LIVE_STATES = ("active", "pending")
Work = Callable[[], Awaitable[Message]]


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
        return lambda: _expire(settings, silences, who, wanted)
    return _create(settings, silences, inv, who, user_name, now)


def _no_second(inv: Invocation, form: str) -> None:
    if inv.arg(1) is not None:
        raise InputError(f"silence {form}: unexpected {shown(inv.arg(1) or '')}")


def _create(
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


async def _expire(settings: Settings, silences: Silences, who: Requester, wanted: str) -> Message:
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
