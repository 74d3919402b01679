"""The *Silence…* modal's submission: what it names (signed when the modal was opened), what was typed,
and the silences it makes, or the field errors shown in the modal (`response_action: errors`).

Nothing in a submission is believed unchecked: its `private_metadata` carries the group, cluster, target
and channel of the message it was opened from and the user who opened it, signed
(`bot.domain.modal_token`); a submission by another user, or with metadata proxybot did not sign, makes
nothing. Alertmanager is given `ANSWER_WITHIN` seconds: Slack closes the modal's request after 3.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Self

from bot.domain import durations, modal_token
from bot.domain.silences import Matcher, NewSilence
from bot.errors import InputError, UpstreamError
from bot.ports import Silences
from bot.render.blocks import fmt_span
from bot.render.silence_modal import (
    COMMENT_BLOCK,
    CUSTOM,
    CUSTOM_BLOCK,
    DURATION_BLOCK,
    MAX_COMMENT,
    PRESETS,
    typed,
)
from bot.store.models import AlertGroupState

ANSWER_WITHIN = 2.0
MIN_SPAN = 60


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
