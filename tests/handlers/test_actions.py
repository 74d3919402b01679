"""The alert buttons: signed presses through the real route and bolt's dispatch, answers at the fake Slack.

The app runs with its lifespan, so its delivery worker sends the thread answers from the outbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from bot.app import Deps, create_app
from bot.clients.alertmanager import AlertmanagerClient
from bot.clients.slack import SlackClient
from bot.compose import slack_endpoints
from bot.delivery.worker import Delivery
from bot.domain.alerts import AlertStatus
from bot.domain.messages import ActionRef
from bot.domain.resolution import EventKind
from bot.domain.silences import Matcher, NewSilence, Silence
from bot.errors import ClusterError, UpstreamError
from bot.ports import Silences as Silencer
from bot.ports import ThreadReplies
from bot.render.blocks import Message, section
from bot.render.silence_modal import COMMENT_BLOCK, CUSTOM, CUSTOM_BLOCK, DURATION_BLOCK, VALUE
from bot.render.slack import (
    ACTION_EXPIRE_SILENCE,
    ACTION_GRAPH,
    ACTION_PATH,
    ACTION_PROBE,
    ACTION_SILENCE,
    ACTION_SILENCE_PAGE,
)
from bot.store import AlertGroupState, Store
from bot.store.errors import StoreError
from bot.store.models import GroupFacts
from config.clusters import ClusterSettings, TargetSettings
from handlers.actions import ButtonChecks
from sim.ports import free_port
from sim.slack_views import form_body, option_value, text_value
from tests.fakes.slack_api import FakeSlack, iter_texts
from tests.fakes.slack_app import (
    ALERTS,
    ALICE,
    BOB,
    GROUP_KEY,
    button_body,
    fake,
    make_settings,
    ref_value,
    store,
)
from tests.fakes.slack_requests import asgi, signed
from tests.harness.alertmanager import Alertmanager
from tests.waiting import eventually

__all__ = ["fake", "store"]  # fixtures shared with the Slack app tests

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
MESSAGE_TS = "1700000001.000100"


@dataclass
class FakeSilencer:
    """Alertmanager's silences as the buttons see them: records each silence, or fails with `error`."""

    error: Exception | None = None
    created: list[dict[str, Any]] = field(default_factory=list)
    gate: asyncio.Event | None = None  # when set up, each silence waits for it: Alertmanager being slow

    async def create_silence(self, silence: NewSilence) -> str:
        if self.gate is not None:
            await self.gate.wait()
        if self.error is not None:
            raise self.error
        self.created.append(
            {
                "matchers": tuple(silence.matchers),
                "span": silence.ends_at - silence.starts_at,
                "created_by": silence.created_by,
                "comment": silence.comment,
            }
        )
        return "6b0e2a1c-8f44-4c31-9e55-2a6f0e1d7c11"

    listed: list[Silence] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)

    async def silences(self) -> list[Silence]:
        return list(self.listed)

    async def expire_silence(self, silence: str) -> None:
        self.expired.append(silence)


@dataclass
class FakeChecks:
    """Checks that record what they were asked and answer with a fixed message, or fail."""

    error: Exception | None = None
    asked: list[tuple[str, str, str]] = field(default_factory=list)

    def check(self, kind: str) -> Any:
        async def run(cluster: ClusterSettings, target: TargetSettings) -> Message:
            self.asked.append((kind, cluster.name, target.name))
            if self.error is not None:
                raise self.error
            return Message(f"{kind} of {target.name}: healthy", (section(f"*{kind}* {target.name} ok"),))

        return run

    def buttons(self) -> ButtonChecks:
        return ButtonChecks(probe=self.check("probe"), path=self.check("path"))


async def save_group(store: Store, facts: GroupFacts | None = None) -> None:
    await store.save_group(
        AlertGroupState(
            channel="#alerts",
            group_key=GROUP_KEY,
            status=AlertStatus.FIRING,
            ts=MESSAGE_TS,
            facts=facts or GroupFacts(),
        )
    )


@dataclass
class StoreDown:
    """An outbox whose store fails every write."""

    async def reply(self, channel: str, group_key: str, message: Message, revision: str) -> None:
        raise StoreError("database is locked")


async def app_for(
    tmp_path: Path,
    fake: FakeSlack,
    store: Store,
    silencer: Silencer | None,
    checks: ButtonChecks | None = None,
    *,
    replies: ThreadReplies | None = None,
    second_cluster: str | None = None,
    silence_max: float | None = None,
) -> Starlette:
    """The buttons over the bot's outbox (its delivery worker runs in the app's lifespan), or `replies`;
    with `second_cluster`, another client cluster (its alerts matched by `cluster`) shares the channel."""
    settings = make_settings(tmp_path, fake.api_url)
    if second_cluster is not None:
        other = settings.clusters[0].model_copy(
            update={"name": second_cluster, "match": {"cluster": second_cluster}, "targets": []}
        )
        settings = settings.model_copy(update={"clusters": [*settings.clusters, other]})
    if silence_max is not None:
        access = settings.access.model_copy(update={"silence_max": silence_max})
        settings = settings.model_copy(update={"access": access})
    if silencer is None:  # as when alertmanager.url is not configured
        settings = settings.model_copy(
            update={"alertmanager": settings.alertmanager.model_copy(update={"url": None})}
        )
    deps = Deps(settings=settings, store=store)
    delivery = Delivery(store, SlackClient.from_settings(settings.slack, timeout=5))
    views = SlackClient.from_settings(settings.slack, timeout=5)
    routes, workers = slack_endpoints(
        settings, deps, checks=checks, silencer=silencer, replies=replies or delivery, views=views
    )
    return create_app(deps, [*workers, delivery.run], extra=routes)


@contextlib.asynccontextmanager
async def serving(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of `app`, its workers running (the in-process transport runs no lifespan)."""
    async with app.router.lifespan_context(app), asgi(app) as http:
        yield http


async def press(http: httpx.AsyncClient, body: str) -> httpx.Response:
    answer = await http.post("/slack/events", content=body, headers=signed(body))
    assert (answer.status_code, answer.text) == (200, ""), "every press is acked at once, with an empty body"
    return answer


@pytest.fixture(autouse=True)
def alert_message(fake: FakeSlack) -> None:
    """The alert message the buttons are on: in Slack before anyone can press them."""
    assert fake.seed_message(ALERTS, "FIRING: ResourceProxyNoHealthyPeers", ts=MESSAGE_TS).ts == MESSAGE_TS


def thread_replies(fake: FakeSlack) -> list[Any]:
    return fake.thread(ALERTS, MESSAGE_TS)


# -- Silence… (the modal) -----------------------------------------------------------------------------

TYPED = {
    DURATION_BLOCK: {VALUE: option_value("4h")},
    CUSTOM_BLOCK: {VALUE: text_value("")},
    COMMENT_BLOCK: {VALUE: text_value("target upgrade, <!channel> back at 14:00")},
}


def form(duration: str = "4h", custom: str = "", comment: str = "target upgrade") -> dict[str, Any]:
    """The values a person leaves in the silence form."""
    return {
        DURATION_BLOCK: {VALUE: option_value(duration)},
        CUSTOM_BLOCK: {VALUE: text_value(custom)},
        COMMENT_BLOCK: {VALUE: text_value(comment)},
    }


async def open_form(http: httpx.AsyncClient, fake: FakeSlack, value: str | None = None) -> dict[str, Any]:
    """Press *Silence…* as Slack sends it (with a fresh trigger_id): the modal it opens."""
    trigger = fake.views.issue_trigger()
    await press(
        http, button_body(ACTION_SILENCE, value or ref_value(), fake.response_url("k1"), trigger_id=trigger)
    )
    [view] = await eventually(lambda: fake.views.opened, "the silence form")
    return dict(view)


async def submit(
    http: httpx.AsyncClient,
    fake: FakeSlack,
    view: dict[str, Any],
    values: dict[str, Any],
    *,
    user: str = ALICE,
    metadata: str | None = None,
) -> dict[str, Any]:
    """Submit the modal as Slack posts it; the answer's JSON (empty: the modal closes)."""
    payload = fake.views.submission(
        view["id"],
        values,
        user=user,
        user_name="alice" if user == ALICE else "bob",
        private_metadata=metadata,
    )
    body = form_body(payload)
    answer = await http.post("/slack/events", content=body, headers=signed(body))
    assert answer.status_code == 200
    found: dict[str, Any] = answer.json() if answer.content else {}
    return found


async def test_the_form_shows_the_matchers_and_its_submission_makes_the_silence(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    await save_group(store)
    silencer = FakeSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        view = await open_form(http, fake)
        shown = "\n".join(iter_texts(view["blocks"]))
        assert '`alertname="ResourceProxyNoHealthyPeers"`' in shown
        assert "at most 7 d" in shown
        assert silencer.created == [], "opening the form silences nothing"
        assert await submit(http, fake, view, TYPED) == {}
        [reply] = await eventually(lambda: thread_replies(fake), "the thread reply")
    [created] = silencer.created
    assert created["matchers"] == (
        Matcher("alertname", "ResourceProxyNoHealthyPeers"),
        Matcher("target", "platform/crd-store"),
    )
    assert created["span"] == timedelta(hours=4)
    assert created["created_by"] == f"alice (Slack {ALICE})"
    assert created["comment"] == "target upgrade, <!channel> back at 14:00"
    assert reply.text.startswith(f"🔕 <@{ALICE}> silenced this alert until ")
    assert "(4 h): target upgrade, &lt;!channel&gt; back at 14:00" in reply.text, "the comment is inert"
    assert "silence `6b0e2a1c-8f44-4c31-9e55-2a6f0e1d7c11`" in reply.text
    assert fake.responses == []


@pytest.mark.parametrize(
    ("values", "block", "error"),
    [
        (form(comment="  "), COMMENT_BLOCK, "Say why"),
        (form(duration=CUSTOM), CUSTOM_BLOCK, "Type a duration"),
        (form(duration=CUSTOM, custom="soon"), CUSTOM_BLOCK, "is not a duration like"),
        (form(duration=CUSTOM, custom="8d"), CUSTOM_BLOCK, "is outside 1m..7d"),
        (form(duration="forever"), DURATION_BLOCK, "Choose how long"),
        # Slack's client stops at 500 characters; a crafted submission is bounded here too.
        (form(comment="x" * 501), COMMENT_BLOCK, "Keep it to 500 characters (this one has 501)"),
    ],
)
async def test_a_bad_form_is_answered_in_the_modal_and_silences_nothing(
    tmp_path: Path, fake: FakeSlack, store: Store, values: dict[str, Any], block: str, error: str
) -> None:
    await save_group(store)
    silencer = FakeSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        view = await open_form(http, fake)
        answer = await submit(http, fake, view, values)
    assert answer["response_action"] == "errors"
    assert error in answer["errors"][block]
    assert silencer.created == []
    assert thread_replies(fake) == []


async def test_a_custom_duration_within_the_limit_is_taken(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    await save_group(store)
    silencer = FakeSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        view = await open_form(http, fake)
        assert await submit(http, fake, view, form(duration=CUSTOM, custom="2h30m")) == {}
    assert [c["span"] for c in silencer.created] == [timedelta(hours=2, minutes=30)]


@pytest.mark.parametrize(
    ("metadata", "user", "why"),
    [
        ("eyJnIjoiMDEyMyJ9.0000", ALICE, "its signature does not match"),
        (None, BOB, "opened by someone else"),
    ],
)
async def test_a_forged_or_borrowed_form_silences_nothing(
    tmp_path: Path, fake: FakeSlack, store: Store, metadata: str | None, user: str, why: str
) -> None:
    await save_group(store)
    silencer = FakeSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        view = await open_form(http, fake)
        answer = await submit(http, fake, view, TYPED, user=user, metadata=metadata)
    assert why in answer["errors"][COMMENT_BLOCK]
    assert silencer.created == []


async def test_a_submission_with_a_bad_signature_is_refused(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    await save_group(store)
    silencer = FakeSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        view = await open_form(http, fake)
        body = form_body(fake.views.submission(view["id"], TYPED, user=ALICE, user_name="alice"))
        answer = await http.post("/slack/events", content=body, headers=signed(body, secret="not-the-secret"))
    assert answer.status_code == 401
    assert silencer.created == []


async def test_an_expired_trigger_is_a_sentence_to_the_presser(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    await save_group(store)
    trigger = fake.views.issue_trigger()
    fake.clock = lambda: time.monotonic() + 10  # the press reached proxybot after Slack's 3 s
    async with serving(await app_for(tmp_path, fake, store, FakeSilencer())) as http:
        await press(
            http, button_body(ACTION_SILENCE, ref_value(), fake.response_url("k1"), trigger_id=trigger)
        )
        [response] = await eventually(lambda: fake.responses, "the answer")
    assert "could not open in time (Slack allows 3 s)" in response["text"]
    assert response["response_type"] == "ephemeral"
    assert fake.views.refused == ["expired_trigger_id"]


async def test_the_submission_waits_for_alertmanager_at_most_two_seconds(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    await save_group(store)
    silencer = FakeSilencer(gate=asyncio.Event())  # never set: Alertmanager hangs
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        view = await open_form(http, fake)
        started = time.monotonic()
        answer = await submit(http, fake, view, TYPED)
        took = time.monotonic() - started
    assert took < 2.9, "answered within Slack's 3 s"
    said = answer["errors"][COMMENT_BLOCK]
    assert said.startswith("Alertmanager did not answer within 2 s: the silence may have been made.")
    assert thread_replies(fake) == []


@dataclass
class LateSilencer(FakeSilencer):
    """Alertmanager that makes the first silence asked for but whose answer never comes (the request timed
    out on proxybot's side after Alertmanager had made it)."""

    answered: asyncio.Event = field(default_factory=asyncio.Event)

    async def create_silence(self, silence: NewSilence) -> str:
        made = await super().create_silence(silence)
        self.listed.append(
            Silence(
                made,
                "active",
                silence.matchers,
                silence.starts_at,
                silence.ends_at,
                silence.created_by,
                silence.comment,
            )
        )
        if len(self.created) == 1:
            await self.answered.wait()  # the first answer is lost
        return made


async def test_a_submission_after_a_lost_answer_finds_the_silence_instead_of_making_another(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    await save_group(store)
    silencer = LateSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        view = await open_form(http, fake)
        first = await submit(http, fake, view, TYPED)
        assert "may have been made" in first["errors"][COMMENT_BLOCK]
        assert await submit(http, fake, view, TYPED) == {}, "the second submission closes the modal"
        [reply] = await eventually(lambda: thread_replies(fake), "the thread reply")
    assert len(silencer.created) == 1, "the silence Alertmanager made is not made twice"
    assert "silence `6b0e2a1c-8f44-4c31-9e55-2a6f0e1d7c11`" in reply.text


async def test_silence_uses_the_stored_labels_of_the_groups_alerts_but_no_replicas(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    common = {"alertname": "ResourceProxyNoHealthyPeers", "target": "platform/crd-store", "cluster": "team-a"}
    # Only replica vc-0 fires so far: the silence must cover the HA client's other replica too (the
    # per-replica labels, pod and instance, are left out of its matchers).
    alerts = [
        {**common, "group_version": "example.com/v1", "pod": "vc-0", "instance": "10.0.0.7:8443"},
        {**common, "group_version": "data.example.com/v1", "pod": "vc-0", "instance": "10.0.0.7:8443"},
    ]
    await save_group(store, GroupFacts(firing_labels=tuple(alerts)))
    silencer = FakeSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        await submit(http, fake, await open_form(http, fake), TYPED)
        await eventually(lambda: thread_replies(fake), "the thread reply")
    [created] = silencer.created
    assert created["matchers"] == (
        Matcher("alertname", "ResourceProxyNoHealthyPeers"),
        Matcher("cluster", "team-a"),
        Matcher("group_version", r"data\.example\.com\/v1|example\.com\/v1", is_regex=True),
        Matcher("target", "platform/crd-store"),
    )


async def test_silence_on_an_incidents_message_silences_every_group_that_joined_it(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    unavailable = {"alertname": "ResourceProxyTargetUnavailable", "target": "platform/crd-store"}
    probe = {"alertname": "ResourceProxyProbeFailing", "namespace": "vcluster-team-a", "cronjob": "probe"}
    members = {"g-unavailable": unavailable, "g-probe": probe, "g-elsewhere": {**unavailable, "x": "y"}}
    for key, labels in members.items():
        # g-elsewhere names the incident but no longer points back to it: not silenced with it.
        incident = None if key == "g-elsewhere" else GROUP_KEY
        facts = GroupFacts(firing_labels=(labels,), incident=incident)
        await store.save_group(AlertGroupState("#alerts", key, AlertStatus.FIRING, facts=facts))
    own = {"alertname": "ResourceProxyNoHealthyPeers", "target": "platform/crd-store"}
    await save_group(store, GroupFacts(firing_labels=(own,), members=tuple(members)))
    silencer = FakeSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        view = await open_form(http, fake)
        assert '`cronjob="probe"`' in "\n".join(iter_texts(view["blocks"])), "the form shows every matcher"
        await submit(http, fake, view, TYPED)
        [reply] = await eventually(lambda: thread_replies(fake), "the thread reply")
    assert [c["matchers"] for c in silencer.created] == [
        (Matcher("alertname", "ResourceProxyNoHealthyPeers"), Matcher("target", "platform/crd-store")),
        (Matcher("alertname", "ResourceProxyTargetUnavailable"), Matcher("target", "platform/crd-store")),
        # A failing probe carries no target: its CronJob and the cluster's namespace say which it is.
        (
            Matcher("alertname", "ResourceProxyProbeFailing"),
            Matcher("cronjob", "probe"),
            Matcher("namespace", "vcluster-team-a"),
        ),
    ]
    assert reply.text.count("silence `6b0e2a1c") == 3
    assert '`cronjob="probe"`' in reply.text


@pytest.mark.parametrize(
    ("user", "channel", "channel_name", "why"),
    [
        (BOB, ALERTS, "alerts", "you are not in `access.silencers`"),
        (ALICE, "C0OTHER01", "random", "this channel may not query cluster `team-a`"),
        (ALICE, "D0DIRECT1", "directmessage", "direct messages may not query cluster `team-a`"),
    ],
)
async def test_silence_refusals_say_what_and_why_and_are_logged(
    tmp_path: Path,
    fake: FakeSlack,
    store: Store,
    caplog: pytest.LogCaptureFixture,
    user: str,
    channel: str,
    channel_name: str,
    why: str,
) -> None:
    caplog.set_level(logging.INFO, logger="handlers.silence")
    await save_group(store)
    silencer = FakeSilencer()
    body = button_body(
        ACTION_SILENCE,
        ref_value(),
        fake.response_url("k1"),
        user=user,
        channel=channel,
        channel_name=channel_name,
        trigger_id=fake.views.issue_trigger(),
    )
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        await press(http, body)
        [response] = await eventually(lambda: fake.responses, "the refusal")
    assert response["text"].startswith(f"You may not silence alerts of cluster `team-a`: {why}")
    assert (response["response_type"], response["replace_original"]) == ("ephemeral", False)
    assert fake.views.opened == [], "no form opens for someone who may not silence"
    assert silencer.created == []
    assert fake.calls_to("chat.postMessage") == []
    assert any("refused silence" in r.getMessage() and user in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("value", "saved", "answer"),
    [
        (ref_value(), False, "proxybot no longer knows this alert group"),
        (ref_value(cluster=None), True, "not tied to one configured cluster"),
        (ref_value(cluster="team-z"), True, "not tied to one configured cluster"),
        ('{"c":"team-a","t":"../../etc","g":"0123456789abcdef"}', True, "This button cannot be used"),
        ("not json", True, "This button cannot be used: button value is not JSON."),
    ],
)
async def test_silence_of_unknown_or_hostile_references_is_answered(
    tmp_path: Path, fake: FakeSlack, store: Store, value: str, saved: bool, answer: str
) -> None:
    if saved:
        await save_group(store)
    silencer = FakeSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        trigger = fake.views.issue_trigger()
        await press(http, button_body(ACTION_SILENCE, value, fake.response_url("k1"), trigger_id=trigger))
        [response] = await eventually(lambda: fake.responses, "the answer")
    assert answer in response["text"]
    assert fake.views.opened == []
    assert silencer.created == []


async def test_a_group_key_naming_neither_target_nor_cluster_is_not_silenced_fleet_wide(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    key = '{}:{alertname="ResourceProxyProbeFailing"}'
    await store.save_group(AlertGroupState(channel="#alerts", group_key=key, status=AlertStatus.FIRING))
    value = ActionRef.for_group("team-a", None, key).encode()
    silencer = FakeSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        trigger = fake.views.issue_trigger()
        await press(http, button_body(ACTION_SILENCE, value, fake.response_url("k1"), trigger_id=trigger))
        [response] = await eventually(lambda: fake.responses, "the refusal")
    assert "a silence would mute it everywhere" in response["text"]
    assert fake.views.opened == []


PROBE_KEY = '{}:{alertname="ResourceProxyProbeFailing"}'


def probe_group(channel: str, channel_id: str | None, namespace: str, ts: str) -> AlertGroupState:
    """A ProbeFailing group (neither `cluster` nor `target` in its key, so the shipped receiver's grouping
    puts every client's in one key), as routed to one channel."""
    labels = {"alertname": "ResourceProxyProbeFailing", "namespace": namespace, "cronjob": "proxy-probe"}
    facts = GroupFacts(firing_labels=(labels,))
    return AlertGroupState(channel, PROBE_KEY, AlertStatus.FIRING, ts=ts, facts=facts, channel_id=channel_id)


@pytest.mark.parametrize(("duration", "custom"), [("1d", ""), (CUSTOM, "13h")])
async def test_an_operators_silence_max_holds_for_the_presets_too(
    tmp_path: Path, fake: FakeSlack, store: Store, duration: str, custom: str
) -> None:
    # access.silence_max: 12h; picking the "1d" preset must not get round it any more than typing 13h.
    await save_group(store)
    silencer = FakeSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer, silence_max=12 * 3600.0)) as http:
        view = await open_form(http, fake)
        answer = await submit(http, fake, view, form(duration=duration, custom=custom))
        assert await submit(http, fake, view, form(duration="4h")) == {}, "within the cap: made"
    block = DURATION_BLOCK if duration != CUSTOM else CUSTOM_BLOCK
    assert answer["response_action"] == "errors"
    assert "at most 12 h, `access.silence_max`" in answer["errors"][block]
    [made] = silencer.created
    assert made["span"] == timedelta(hours=4)


async def test_a_press_acts_on_its_own_channels_group_never_on_another_channels_with_the_same_key(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    # The hostile read: one group key posted in two channels; Silence… pressed on the message in #alerts
    # opened a form for the other channel's row (another client's namespace) and silenced it.
    await store.save_group(probe_group("#team-b", "C0TEAMB", "vcluster-team-b", "1700000002.000100"))
    value = ActionRef.for_group("team-a", None, PROBE_KEY).encode()
    silencer = FakeSilencer()
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        trigger = fake.views.issue_trigger()
        await press(http, button_body(ACTION_SILENCE, value, fake.response_url("k1"), trigger_id=trigger))
        [response] = await eventually(lambda: fake.responses, "the refusal")
        assert "no longer knows this alert group" in response["text"]
        assert fake.views.opened == []
        await store.save_group(probe_group("#alerts", ALERTS, "vcluster-team-a", MESSAGE_TS))
        trigger = fake.views.issue_trigger()
        await press(http, button_body(ACTION_SILENCE, value, fake.response_url("k2"), trigger_id=trigger))
        [view] = await eventually(lambda: fake.views.opened, "the silence form")
        shown = "\n".join(iter_texts(view["blocks"]))
        assert '`namespace="vcluster-team-a"`' in shown
        assert "team-b" not in shown
        assert await submit(http, fake, dict(view), TYPED) == {}
    [created] = silencer.created
    assert Matcher("namespace", "vcluster-team-a") in created["matchers"]


async def test_a_group_holding_another_clusters_alerts_is_not_silenced_from_this_clusters_button(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    # Two clients sharing one channel: one group key holds alerts of both. Access is checked on the
    # button's cluster, so a silence of the other's alerts is refused.
    labels = ({"alertname": "ResourceProxyNoHealthyPeers", "cluster": "team-b", "target": "platform/x"},)
    await save_group(store, GroupFacts(firing_labels=labels))
    silencer = FakeSilencer()
    app = await app_for(tmp_path, fake, store, silencer, second_cluster="team-b")
    async with serving(app) as http:
        trigger = fake.views.issue_trigger()
        await press(
            http, button_body(ACTION_SILENCE, ref_value(), fake.response_url("k1"), trigger_id=trigger)
        )
        [response] = await eventually(lambda: fake.responses, "the refusal")
    assert "also holds alerts of cluster `team-b`" in response["text"]
    assert fake.views.opened == []
    assert silencer.created == []


async def test_alertmanager_failing_or_unconfigured_is_a_clear_answer(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    await save_group(store)
    failing = FakeSilencer(
        error=UpstreamError("Alertmanager at http://am:9093 failed creating a silence: timed out")
    )
    async with serving(await app_for(tmp_path, fake, store, failing)) as http:
        answer = await submit(http, fake, await open_form(http, fake), TYPED)
    assert answer["errors"][COMMENT_BLOCK] == (
        "Alertmanager refused or failed: Alertmanager at http://am:9093 failed creating a silence: timed out"
        ": nothing was silenced. Try again."
    )
    async with serving(await app_for(tmp_path, fake, store, None)) as http:
        trigger = fake.views.issue_trigger()
        await press(
            http, button_body(ACTION_SILENCE, ref_value(), fake.response_url("k2"), trigger_id=trigger)
        )
        [response] = await eventually(lambda: fake.responses, "the answer")
    assert "`alertmanager.url` is not set" in response["text"]
    assert thread_replies(fake) == []


async def test_an_unexpected_error_is_answered_without_a_traceback(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    await save_group(store)
    broken = FakeSilencer(error=RuntimeError("boom at /srv/secret/path.py line 3"))
    async with serving(await app_for(tmp_path, fake, store, broken)) as http:
        answer = await submit(http, fake, await open_form(http, fake), TYPED)
    assert (
        answer["errors"][COMMENT_BLOCK] == "The silence failed on proxybot's side; the error is in its log."
    )


def listed(sid: str, target: str, state: str = "active") -> Silence:
    at = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    matchers = (Matcher("target", target),)
    return Silence(sid, state, matchers, at, at + timedelta(hours=2), "ops", "node drain")


async def test_expire_silence_expires_the_active_silences_covering_the_message_and_says_so(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    own = {"alertname": "ResourceProxyNoHealthyPeers", "target": "platform/crd-store"}
    await save_group(store, GroupFacts(firing_labels=(own,)))
    covering_ids = ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"]
    silencer = FakeSilencer(
        listed=[
            listed(covering_ids[0], "platform/crd-store"),
            listed(covering_ids[1], "platform/crd-store"),
            listed("33333333-3333-4333-8333-333333333333", "platform/crd-store", state="expired"),
            listed("44444444-4444-4444-8444-444444444444", "platform/other"),
        ]
    )
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        await press(http, button_body(ACTION_EXPIRE_SILENCE, ref_value(), fake.response_url("k1")))
        [reply] = await eventually(lambda: thread_replies(fake), "the thread line")
    assert sorted(silencer.expired) == covering_ids
    assert reply.text.startswith(f"🔔 <@{ALICE}> expired the silence of this alert")
    assert fake.responses == []


async def drained(store: Store) -> None:
    """Until the outbox has no row left to send (every queued Slack operation done)."""

    async def empty() -> bool:
        return await store.depth() == 0

    await eventually(empty, "the outbox to drain")


async def test_expire_silence_leaves_a_broader_silence_alone_and_names_it(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    own = {"alertname": "ResourceProxyNoHealthyPeers", "target": "platform/crd-store"}
    await save_group(store, GroupFacts(firing_labels=(own,)))
    mine, whole = "11111111-1111-4111-8111-111111111111", "55555555-5555-4555-8555-555555555555"
    at = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    cluster_wide = Silence(
        whole,
        "active",
        (Matcher("target", "platform/.*", is_regex=True),),
        at,
        at + timedelta(hours=4),
        "ops <script>",
        "cluster upgrade",
    )
    silencer = FakeSilencer(listed=[listed(mine, "platform/crd-store"), cluster_wide])
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        await press(http, button_body(ACTION_EXPIRE_SILENCE, ref_value(), fake.response_url("k1")))
        [reply] = await eventually(lambda: thread_replies(fake), "the thread line")
        [told] = await eventually(lambda: fake.responses, "the note on the broader silence")
        await drained(store)  # the thread line's row done before this app stops (the next one would send it)
    assert silencer.expired == [mine], "only the alert's own silence"
    assert mine in reply.text
    assert whole not in reply.text
    assert told["response_type"] == "ephemeral"
    assert f"Left alone, broader than this alert (it silences other alerts too): `{whole}`" in told["text"]
    assert 'target=~"platform/.*"' in told["text"]
    assert "ops &lt;script&gt;" in told["text"], "escaped"

    silencer.listed, silencer.expired, fake.responses[:] = [cluster_wide], [], []
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        await press(http, button_body(ACTION_EXPIRE_SILENCE, ref_value(), fake.response_url("k2")))
        [refused] = await eventually(lambda: fake.responses, "the refusal")
    assert silencer.expired == [], "a broader silence alone is never expired from the alert"
    assert "Left alone, broader than this alert" in refused["text"]
    assert len(thread_replies(fake)) == 1


async def test_expire_silence_refusals(tmp_path: Path, fake: FakeSlack, store: Store) -> None:
    own = {"alertname": "ResourceProxyNoHealthyPeers", "target": "platform/crd-store"}
    await save_group(store, GroupFacts(firing_labels=(own,)))
    silencer = FakeSilencer(listed=[listed("44444444-4444-4444-8444-444444444444", "platform/other")])
    async with serving(await app_for(tmp_path, fake, store, silencer)) as http:
        await press(http, button_body(ACTION_EXPIRE_SILENCE, ref_value(), fake.response_url("k1")))
        await eventually(lambda: fake.responses, "the first answer")
        body = button_body(ACTION_EXPIRE_SILENCE, ref_value(), fake.response_url("k2"), user=BOB)
        await press(http, body)
        await eventually(lambda: len(fake.responses) == 2, "the refusal")
    assert "No active silence covers this alert any more" in fake.responses[0]["text"]
    assert "You may not silence alerts of cluster `team-a`" in fake.responses[1]["text"]
    assert silencer.expired == []


async def test_a_thread_answer_that_meets_a_429_is_still_delivered(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    await save_group(store)
    fake.fail("chat.postMessage", status=429, retry_after=1, times=2)
    async with serving(await app_for(tmp_path, fake, store, FakeSilencer())) as http:
        await submit(http, fake, await open_form(http, fake), TYPED)
        [reply] = await eventually(lambda: thread_replies(fake), "the thread reply after the 429s")
    assert reply.text.startswith(f"🔕 <@{ALICE}> silenced this alert until")
    assert len(fake.calls_to("chat.postMessage")) == 3, "refused twice with 429, then sent"
    assert fake.responses == []


async def test_a_redelivered_press_answers_in_the_thread_once(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    await save_group(store)
    checks = FakeChecks()
    body = button_body(ACTION_PROBE, ref_value(), fake.response_url("k1"))
    async with serving(await app_for(tmp_path, fake, store, FakeSilencer(), checks.buttons())) as http:
        await press(http, body)
        await press(http, body)  # Slack sends a press again when it thinks the ack was late
        await eventually(lambda: len(checks.asked) == 2, "both presses ran")
        await eventually(lambda: thread_replies(fake), "the thread reply")
        await asyncio.sleep(1.5)  # time for a second reply, if one were queued
    assert len(thread_replies(fake)) == 1


@pytest.mark.parametrize(
    ("saved", "replies", "why"),
    [
        (False, None, "proxybot no longer knows this alert's message"),
        (True, StoreDown(), "proxybot could not queue it"),
    ],
)
async def test_an_answer_that_cannot_go_in_the_thread_goes_to_the_presser(
    tmp_path: Path,
    fake: FakeSlack,
    store: Store,
    caplog: pytest.LogCaptureFixture,
    saved: bool,
    replies: ThreadReplies | None,
    why: str,
) -> None:
    if saved:
        await save_group(store)
    checks = FakeChecks()
    app = await app_for(tmp_path, fake, store, FakeSilencer(), checks.buttons(), replies=replies)
    async with serving(app) as http:
        await press(http, button_body(ACTION_PROBE, ref_value(), fake.response_url("k1")))
        await eventually(lambda: len(fake.responses) == 2, "the progress line and the answer")
    answer = fake.responses[1]
    assert answer["response_type"] == "ephemeral"
    assert answer["text"] == "probe of platform/crd-store: healthy"
    assert list(iter_texts(answer["blocks"]))[-1] == f"Not posted in the alert's thread: {why}."
    assert thread_replies(fake) == []
    if saved:
        assert any("database is locked" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
async def test_the_silence_form_against_real_alertmanager(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    await save_group(store)
    with Alertmanager(tmp_path, f"http://127.0.0.1:{free_port()}/alertmanager") as am:
        settings = make_settings(tmp_path, fake.api_url)
        settings = settings.model_copy(
            update={"alertmanager": settings.alertmanager.model_copy(update={"url": am.url})}
        )
        deps = Deps(settings=settings, store=store)
        client = AlertmanagerClient.from_settings(settings.alertmanager)
        slack = SlackClient.from_settings(settings.slack, timeout=5)
        delivery = Delivery(store, slack)
        routes, workers = slack_endpoints(settings, deps, silencer=client, replies=delivery, views=slack)
        app = create_app(deps, [*workers, delivery.run], extra=routes)
        try:
            async with app.router.lifespan_context(app), asgi(app) as http:
                assert await submit(http, fake, await open_form(http, fake), TYPED) == {}
                [reply] = await eventually(lambda: thread_replies(fake), "the thread reply", timeout=20)
        finally:
            await client.aclose()
        reader = AlertmanagerClient.from_settings(settings.alertmanager)
        [silence] = await reader.silences()
        await reader.aclose()
    assert f"silence `{silence.id}`" in reply.text
    assert silence.state == "active"
    assert silence.created_by == f"alice (Slack {ALICE})"
    assert silence.comment == "target upgrade, <!channel> back at 14:00"
    assert {(m.name, m.value) for m in silence.matchers} == {
        ("alertname", "ResourceProxyNoHealthyPeers"),
        ("target", "platform/crd-store"),
    }
    assert silence.ends_at - silence.starts_at == pytest.approx(timedelta(hours=4), abs=timedelta(seconds=1))


# -- Probe now / Path check ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "kind", "first"),
    [(ACTION_PROBE, "probe", "Probing"), (ACTION_PATH, "path", "Checking the path to")],
)
async def test_an_injected_check_runs_for_the_buttons_target_and_answers_in_the_thread(
    tmp_path: Path, fake: FakeSlack, store: Store, action: str, kind: str, first: str
) -> None:
    await save_group(store)
    checks = FakeChecks()
    async with serving(await app_for(tmp_path, fake, store, FakeSilencer(), checks.buttons())) as http:
        await press(http, button_body(action, ref_value(), fake.response_url("k1")))
        [reply] = await eventually(lambda: thread_replies(fake), "the check's answer")
    assert checks.asked == [(kind, "team-a", "platform/crd-store")]
    assert reply.text == f"{kind} of platform/crd-store: healthy"
    assert reply.blocks == [section(f"*{kind}* platform/crd-store ok")]
    [progress] = fake.responses
    assert progress["text"] == f"{first} `platform/crd-store`…"


async def test_check_buttons_are_not_registered_without_checks(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    async with serving(await app_for(tmp_path, fake, store, FakeSilencer())) as http:
        body = button_body(ACTION_PROBE, ref_value(), fake.response_url("k1"))
        answer = await http.post("/slack/events", content=body, headers=signed(body))
    assert answer.status_code == 404  # bolt's answer for an action nobody listens to


async def test_a_link_button_press_is_acked_and_nothing_else(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    async with serving(await app_for(tmp_path, fake, store, FakeSilencer())) as http:
        for action in (ACTION_GRAPH, ACTION_SILENCE_PAGE):
            await press(http, button_body(action, "", fake.response_url(f"link-{action}")))
    assert thread_replies(fake) == []  # the page opened in the browser: nothing to answer


@pytest.mark.parametrize(
    ("value", "channel", "answer"),
    [
        (ref_value(), "C0OTHER01", "This channel may not query cluster `team-a`"),
        (ref_value(target=None), ALERTS, "spans several targets or clusters"),
        (
            ref_value(target="platform/unknown"),
            ALERTS,
            "Target `platform/unknown` of cluster `team-a` is not",
        ),
    ],
)
async def test_check_refusals_run_nothing(
    tmp_path: Path, fake: FakeSlack, store: Store, value: str, channel: str, answer: str
) -> None:
    checks = FakeChecks()
    async with serving(await app_for(tmp_path, fake, store, FakeSilencer(), checks.buttons())) as http:
        body = button_body(
            ACTION_PROBE, value, fake.response_url("k1"), channel=channel, channel_name="random"
        )
        await press(http, body)
        [response] = await eventually(lambda: fake.responses, "the refusal")
    assert answer in response["text"]
    assert checks.asked == []


async def test_a_failing_check_is_a_clear_answer(tmp_path: Path, fake: FakeSlack, store: Store) -> None:
    checks = FakeChecks(error=ClusterError("team-a", "unreachable", "connection refused"))
    async with serving(await app_for(tmp_path, fake, store, FakeSilencer(), checks.buttons())) as http:
        await press(http, button_body(ACTION_PATH, ref_value(), fake.response_url("k1")))
        await eventually(lambda: len(fake.responses) == 2, "the progress line and the failure")
    assert fake.responses[1]["text"] == "The check failed: cluster team-a: connection refused"
    assert thread_replies(fake) == []


@pytest.mark.parametrize(
    ("action", "kind"), [(ACTION_PROBE, EventKind.PROBE), (ACTION_PATH, EventKind.PATH_CHECK)]
)
async def test_a_check_run_from_the_message_is_recorded_once_for_its_resolution_summary(
    tmp_path: Path, fake: FakeSlack, store: Store, action: str, kind: EventKind
) -> None:
    episode = 1_700_000_000.0
    await store.save_group(
        AlertGroupState("#alerts", GROUP_KEY, AlertStatus.FIRING, ts=MESSAGE_TS, first_firing_at=episode)
    )
    checks = FakeChecks()
    body = button_body(action, ref_value(), fake.response_url("k1"))
    async with serving(await app_for(tmp_path, fake, store, FakeSilencer(), checks.buttons())) as http:
        await press(http, body)
        await press(http, body)  # redelivered: recorded once
        await eventually(lambda: len(checks.asked) == 2, "both presses ran")
        await eventually(lambda: thread_replies(fake), "the thread reply")
        events = await eventually(
            lambda: store.episode_events("#alerts", GROUP_KEY, episode), "the check's record"
        )
    [event] = events
    assert event.kind is kind
    assert event.actor == "alice", "named by the summary, not mentioned"
    assert event.detail == f"{kind.value.split('_')[0]} of platform/crd-store: healthy"
