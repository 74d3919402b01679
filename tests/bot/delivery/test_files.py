"""Files through the outbox against the fake Slack: a table uploaded into a thread, and replaced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.clients.slack import SlackClient
from bot.delivery.keys import delete_key, upload_key
from bot.delivery.plan import DeliveryPolicy
from bot.delivery.worker import Delivery
from bot.render.blocks import Message, section
from bot.store import OutboxState, Store, open_store
from config.settings import SlackSettings
from tests.fakes.slack_api import FakeSlack
from tests.waiting import eventually

TOKEN = "xoxb-test-token"
ALERTS = "#alerts"
FAST = DeliveryPolicy(posts_per_second=50, backoff_base=0.05, backoff_cap=0.2, wait_for_post=0.05)


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=TOKEN, channels={"C1": ALERTS}) as slack:
        yield slack


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}")
    yield opened
    await opened.close()


@pytest.fixture
async def delivery(fake: FakeSlack, store: Store) -> AsyncIterator[Delivery]:
    slack = SlackClient.from_settings(SlackSettings(bot_token=TOKEN, api_url=fake.api_url), timeout=2.0)
    worker = Delivery(store, slack, policy=FAST)
    task = asyncio.create_task(worker.run())
    yield worker
    await worker.stop()
    await task


async def drained(store: Store) -> None:
    async def empty() -> bool:
        return await store.depth() == 0

    await eventually(empty, "the outbox to drain", timeout=10)


async def upload(delivery: Delivery, content: bytes, revision: str) -> None:
    await delivery.upload_file(ALERTS, "storm", content, filename="t.txt", title="targets", revision=revision)


async def test_a_table_goes_into_the_thread_and_its_file_ids_are_kept(
    fake: FakeSlack, store: Store, delivery: Delivery
) -> None:
    await delivery.post(ALERTS, "storm", Message("storm", (section("storm"),)))
    await upload(delivery, b"cluster target\n", "table:1")
    await drained(store)
    [top] = fake.top_level()
    [shared] = fake.shown_uploads()
    assert (shared["content"], shared["thread_ts"], shared["title"]) == (
        b"cluster target\n",
        top.ts,
        "targets",
    )
    row = await store.outbox_item(upload_key(ALERTS, "storm", "table:1"))
    assert row is not None
    assert row.result is not None
    assert row.result["files"] == [shared["id"]]


async def test_a_replaced_table_is_deleted_after_the_new_one_is_up(
    fake: FakeSlack, store: Store, delivery: Delivery
) -> None:
    await delivery.post(ALERTS, "storm", Message("storm", (section("storm"),)))
    await upload(delivery, b"old\n", "table:1")
    await upload(delivery, b"new\n", "table:2")
    await delivery.delete_upload(ALERTS, "storm", upload="table:1", replaced_by="table:2")
    await drained(store)
    assert [u["content"] for u in fake.shown_uploads()] == [b"new\n"]
    [old, new] = fake.uploads
    assert old["deleted_at"] >= new["at"]  # the thread never lacked a table
    row = await store.outbox_item(delete_key(ALERTS, "storm", "table:1"))
    assert row is not None
    assert (row.state, row.result) == (OutboxState.DONE, {"deleted": [old["id"]]})


async def test_a_file_slack_no_longer_has_counts_as_deleted(
    fake: FakeSlack, store: Store, delivery: Delivery
) -> None:
    await delivery.post(ALERTS, "storm", Message("storm", (section("storm"),)))
    await upload(delivery, b"old\n", "table:1")
    await drained(store)
    [old] = fake.uploads
    await AsyncWebClient(token=TOKEN, base_url=fake.api_url).files_delete(file=old["id"])  # by someone else
    await delivery.delete_upload(ALERTS, "storm", upload="table:1")
    await drained(store)
    row = await store.outbox_item(delete_key(ALERTS, "storm", "table:1"))
    assert row is not None
    assert row.state is OutboxState.DONE


async def test_deleting_an_upload_that_never_happened_deletes_nothing(
    store: Store, delivery: Delivery
) -> None:
    await delivery.post(ALERTS, "storm", Message("storm", (section("storm"),)))
    await delivery.delete_upload(ALERTS, "storm", upload="table:never")
    await drained(store)
    row = await store.outbox_item(delete_key(ALERTS, "storm", "table:never"))
    assert row is not None
    assert (row.state, row.result) == (OutboxState.DONE, {"deleted": []})


async def test_a_table_whose_replacement_slack_refused_stays(
    fake: FakeSlack, store: Store, delivery: Delivery
) -> None:
    await delivery.post(ALERTS, "storm", Message("storm", (section("storm"),)))
    await upload(delivery, b"old\n", "table:1")
    await drained(store)
    fake.fail("files.getUploadURLExternal", status=200, error="invalid_arguments")
    await upload(delivery, b"new\n", "table:2")
    await delivery.delete_upload(ALERTS, "storm", upload="table:1", replaced_by="table:2")
    await drained(store)
    replacement = await store.outbox_item(upload_key(ALERTS, "storm", "table:2"))
    assert replacement is not None
    assert replacement.state is OutboxState.FAILED
    assert [u["content"] for u in fake.shown_uploads()] == [b"old\n"]  # the thread keeps a table
    row = await store.outbox_item(delete_key(ALERTS, "storm", "table:1"))
    assert row is not None
    assert (row.state, row.result) == (OutboxState.DONE, {"deleted": [], "kept": "replacement not uploaded"})


async def test_the_next_replacement_deletes_the_table_a_refused_one_left(
    fake: FakeSlack, store: Store, delivery: Delivery
) -> None:
    # table:1 up, table:2 refused (table:1 kept), table:3 up: the thread ends with table:3 alone.
    await delivery.post(ALERTS, "storm", Message("storm", (section("storm"),)))
    await upload(delivery, b"one\n", "table:1")
    await drained(store)
    fake.fail("files.getUploadURLExternal", status=200, error="invalid_arguments")
    await delivery.upload_file(
        ALERTS, "storm", b"two\n", filename="t.txt", title="targets", revision="table:2", replaces="table:1"
    )
    await delivery.delete_upload(ALERTS, "storm", upload="table:1", replaced_by="table:2")
    await drained(store)
    await delivery.upload_file(
        ALERTS, "storm", b"three\n", filename="t.txt", title="targets", revision="table:3", replaces="table:2"
    )
    await delivery.delete_upload(ALERTS, "storm", upload="table:2", replaced_by="table:3")
    await drained(store)
    assert [u["content"] for u in fake.shown_uploads()] == [b"three\n"]
