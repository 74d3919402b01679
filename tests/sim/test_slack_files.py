"""The fake Slack's files: files_upload_v2's steps and files.delete refuse what Slack refuses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from sim.slack_api import UPLOAD_CALL
from tests.fakes.slack_api import FakeSlack

TOKEN = "xoxb-test-token"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=TOKEN, channels={"C1": "#alerts", "C2": "#other"}) as fake:
        fake.add_channel("C3", name="#outside", member=False)
        yield fake


def call(slack: FakeSlack, method: str, **params: Any) -> dict[str, Any]:
    """One Web API call as slack_sdk makes it (form-encoded, bearer token)."""
    response = httpx.post(
        f"{slack.api_url}{method}", data=params, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5
    )
    answer: dict[str, Any] = response.json()
    return answer


def upload_url(slack: FakeSlack, length: int) -> tuple[str, str]:
    answer = call(slack, "files.getUploadURLExternal", filename="t.txt", length=str(length))
    assert answer["ok"], answer
    return str(answer["file_id"]), str(answer["upload_url"])


def files(*ids: str) -> str:
    return "[" + ",".join(f'{{"id": "{i}", "title": "t"}}' for i in ids) + "]"


def thread(slack: FakeSlack) -> str:
    return str(call(slack, "chat.postMessage", channel="C1", text="storm")["ts"])


def test_the_three_steps_share_a_file_into_a_thread_and_are_all_recorded(slack: FakeSlack) -> None:
    ts = thread(slack)
    file_id, url = upload_url(slack, 5)
    assert httpx.post(url, content=b"a,b,c", timeout=5).status_code == 200
    answer = call(slack, "files.completeUploadExternal", files=files(file_id), channel_id="C1", thread_ts=ts)
    assert answer == {"ok": True, "files": [{"id": file_id, "title": "t"}]}
    [upload] = slack.shown_uploads()
    assert (upload["content"], upload["channel_id"], upload["thread_ts"]) == (b"a,b,c", "C1", ts)
    assert [c.method for c in slack.calls][-3:] == [
        "files.getUploadURLExternal",
        UPLOAD_CALL,
        "files.completeUploadExternal",
    ]


def test_complete_without_the_upload_is_refused(slack: FakeSlack) -> None:
    file_id, _ = upload_url(slack, 5)
    answer = call(slack, "files.completeUploadExternal", files=files(file_id), channel_id="C1")
    assert answer == {"ok": False, "error": "file_not_found"}
    assert slack.uploads == []


def test_bytes_of_another_length_than_announced_are_refused(slack: FakeSlack) -> None:
    file_id, url = upload_url(slack, 5)
    assert httpx.post(url, content=b"abcdef", timeout=5).status_code == 400
    assert httpx.post(url, content=b"abc", timeout=5).status_code == 400
    answer = call(slack, "files.completeUploadExternal", files=files(file_id), channel_id="C1")
    assert answer["error"] == "file_not_found"


def test_an_upload_url_takes_bytes_once_and_a_file_completes_once(slack: FakeSlack) -> None:
    file_id, url = upload_url(slack, 3)
    assert httpx.post(url, content=b"abc", timeout=5).status_code == 200
    assert httpx.post(url, content=b"abc", timeout=5).status_code == 400
    assert call(slack, "files.completeUploadExternal", files=files(file_id), channel_id="C1")["ok"]
    again = call(slack, "files.completeUploadExternal", files=files(file_id), channel_id="C1")
    assert again["error"] == "file_not_found"
    assert len(slack.uploads) == 1
    assert httpx.post(f"{slack.base_url}/upload/F99999999", content=b"x", timeout=5).status_code == 404


@pytest.mark.parametrize(
    ("where", "error"),
    [
        ({"channel_id": "C9"}, "channel_not_found"),
        ({"channel_id": "#alerts"}, "channel_not_found"),
        ({"channel_id": "C3"}, "not_in_channel"),
        ({"channel_id": "C1", "thread_ts": "1.000001"}, "thread_not_found"),
        ({"thread_ts": "1.000001"}, "thread_not_found"),
    ],
)
def test_complete_into_a_channel_or_thread_slack_does_not_have_is_refused(
    slack: FakeSlack, where: dict[str, str], error: str
) -> None:
    file_id, url = upload_url(slack, 1)
    httpx.post(url, content=b"x", timeout=5)
    assert call(slack, "files.completeUploadExternal", files=files(file_id), **where)["error"] == error
    assert slack.uploads == []


@pytest.mark.parametrize("length", ["0", "-3", "five", ""])
def test_a_length_that_is_no_positive_byte_count_is_refused(slack: FakeSlack, length: str) -> None:
    answer = call(slack, "files.getUploadURLExternal", filename="t.txt", length=length)
    assert answer["error"] == "invalid_arguments"


def test_a_thread_of_another_channel_is_not_found(slack: FakeSlack) -> None:
    ts = thread(slack)
    file_id, url = upload_url(slack, 1)
    httpx.post(url, content=b"x", timeout=5)
    answer = call(slack, "files.completeUploadExternal", files=files(file_id), channel_id="C2", thread_ts=ts)
    assert answer["error"] == "thread_not_found"


async def test_files_upload_v2_then_delete_removes_the_file_once(slack: FakeSlack) -> None:
    web = AsyncWebClient(token=TOKEN, base_url=slack.api_url, timeout=5)
    ts = thread(slack)
    done = await web.files_upload_v2(channel="C1", thread_ts=ts, content=b"table", filename="t.txt")
    file_id = done["files"][0]["id"]
    assert (await web.files_delete(file=file_id))["ok"]
    assert slack.shown_uploads() == []
    assert slack.uploads[0]["deleted_at"] is not None
    for missing, error in ((file_id, "file_deleted"), ("F0000000X", "file_not_found")):
        with pytest.raises(SlackApiError) as refused:
            await web.files_delete(file=missing)
        assert refused.value.response["error"] == error


def test_files_delete_needs_files_write() -> None:
    with FakeSlack(bot_token=TOKEN, channels=["C1"], scopes={"chat:write"}) as slack:
        answer = call(slack, "files.delete", file="F00000001")
    assert (answer["error"], answer["needed"]) == ("missing_scope", "files:write")


def test_each_shared_file_is_told_to_the_listener() -> None:
    told: list[dict[str, Any]] = []
    with FakeSlack(bot_token=TOKEN, channels=["C1"], on_upload=told.append) as slack:
        file_id, url = upload_url(slack, 2)
        httpx.post(url, content=b"ok", timeout=5)
        call(slack, "files.completeUploadExternal", files=files(file_id), channel_id="C1")
    assert [(u["id"], u["content"]) for u in told] == [(file_id, b"ok")]
