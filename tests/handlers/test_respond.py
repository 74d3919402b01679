"""The one answer ladder of `/proxy` and the buttons: every ending is a sentence to the person who asked."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.errors import InputError, Refused, UpstreamError
from handlers.respond import Asked, answering

LOG = logging.getLogger("tests.handlers.respond")


@dataclass
class FakeRespond:
    """bolt's `respond`: records each answer and accepts it."""

    answers: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, **kwargs: Any) -> Any:
        self.answers.append(kwargs)
        return None


def asked() -> Asked:
    return Asked("`/proxy probe`", "probe by U1 in #ops", "That command cannot run: {}.", LOG)


@pytest.mark.parametrize(
    ("error", "answer"),
    [
        (Refused("You may not."), "You may not."),
        (InputError("TARGET: <x> is odd"), "That command cannot run: TARGET: &lt;x&gt; is odd."),
        (UpstreamError("Prometheus is down"), "`/proxy probe` failed: Prometheus is down"),
        (
            RuntimeError("/srv/secret line 3"),
            "`/proxy probe` failed on proxybot's side; the error is in its log.",
        ),
    ],
)
async def test_every_ending_is_one_ephemeral_sentence(error: Exception, answer: str) -> None:
    respond = FakeRespond()

    async def work() -> None:
        raise error

    await answering(respond, asked(), work)
    assert [(a["text"], a["response_type"]) for a in respond.answers] == [(answer, "ephemeral")]


async def test_work_that_ends_well_is_not_answered_twice(caplog: pytest.LogCaptureFixture) -> None:
    respond = FakeRespond()

    async def work() -> None:
        return None

    await answering(respond, asked(), work)
    assert respond.answers == []
    assert caplog.records == []
