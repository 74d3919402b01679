"""AlertmanagerClient against a real Alertmanager 0.25 (silences: create, list, expire; the alerts it lists
active), its failures, and matchers."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.clients.alertmanager import ACTIVE_TIMEOUT, AlertmanagerClient
from bot.domain.silences import Matcher, NewSilence, group_labels_from_key, matchers_for, silence_id
from bot.errors import ConfigError, InputError, UpstreamError
from config.settings import AlertmanagerSettings
from sim.ports import free_port
from tests.fakes.http_server import LocalServer, Request
from tests.harness.alertmanager import Alertmanager
from tests.waiting import eventually

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
TARGET = {"alertname": "ResourceProxyNoHealthyPeers", "target": "platform/crd-store", "cluster": "team-a"}


@pytest.fixture(scope="module")
def alertmanager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Alertmanager]:
    # Nothing is routed anywhere in these tests: the webhook URL only has to be well-formed.
    workdir = tmp_path_factory.mktemp("alertmanager")
    with Alertmanager(workdir, f"http://127.0.0.1:{free_port()}/alertmanager") as am:
        yield am


@pytest.fixture
async def client(alertmanager: Alertmanager) -> AsyncIterator[AlertmanagerClient]:
    am = AlertmanagerClient.from_settings(AlertmanagerSettings(url=alertmanager.url), timeout=5.0)
    yield am
    await am.aclose()


def silenced_by(am: Alertmanager, labels: dict[str, str]) -> list[str] | None:
    for alert in am.alerts():
        if alert["labels"] == labels:
            found: list[str] = alert["status"]["silencedBy"]
            return found
    return None


async def wait_silenced_by(am: Alertmanager, labels: dict[str, str], silence: str) -> None:
    # Alertmanager marks an alert silenced when it is next evaluated; give it a bounded while.
    async def silenced() -> bool:
        return silence in (await asyncio.to_thread(silenced_by, am, labels) or [])

    await eventually(silenced, f"alert {labels} silenced by {silence}", timeout=20, interval=0.2)


@pytest.mark.slow
async def test_create_list_and_expire_a_silence(client: AlertmanagerClient) -> None:
    now = datetime.now(UTC)
    matchers = (Matcher("alertname", TARGET["alertname"]), Matcher("target", TARGET["target"]))
    created = await client.create_silence(
        NewSilence(matchers, now, now + timedelta(hours=1), "alice (Slack U1)", "1h")
    )
    assert silence_id(created) == created
    [listed] = [s for s in await client.silences() if s.id == created]
    assert (listed.state, listed.created_by, listed.comment) == ("active", "alice (Slack U1)", "1h")
    assert set(listed.matchers) == set(matchers)
    assert listed.ends_at - listed.starts_at == pytest.approx(timedelta(hours=1), abs=timedelta(seconds=1))

    await client.expire_silence(created.upper())  # any spelling of the UUID is the same silence
    [expired] = [s for s in await client.silences() if s.id == created]
    assert expired.state == "expired"


@pytest.mark.slow
async def test_regex_matchers_from_differing_labels_silence_exactly_those_alerts(
    alertmanager: Alertmanager, client: AlertmanagerClient
) -> None:
    pods = [{**TARGET, "pod": "vc-team-a-0"}, {**TARGET, "pod": "vc-team-a-1.x+y"}]
    other = {**TARGET, "pod": "vc-team-a-2"}
    await asyncio.to_thread(alertmanager.post_alerts, [{"labels": labels} for labels in [*pods, other]])
    matchers = matchers_for(pods, ["alertname", "target", "pod"])
    assert [m.is_regex for m in matchers] == [False, True, False]
    now = datetime.now(UTC)
    created = await client.create_silence(NewSilence(matchers, now, now + timedelta(minutes=5), "t", "regex"))
    for labels in pods:
        await wait_silenced_by(alertmanager, labels, created)
    assert created not in (await asyncio.to_thread(silenced_by, alertmanager, other) or [])
    await client.expire_silence(created)


@pytest.mark.slow
async def test_refusals_and_unknown_ids_are_clear_upstream_errors(client: AlertmanagerClient) -> None:
    with pytest.raises(UpstreamError, match=r"failed creating a silence: HTTP 400: .*"):
        await client.create_silence(
            NewSilence((Matcher("alertname", "X"),), NOW, NOW - timedelta(hours=1), "t", "")
        )
    with pytest.raises(UpstreamError, match="expiring silence 00000000-0000-4000-8000-000000000000"):
        await client.expire_silence("00000000-0000-4000-8000-000000000000")


@pytest.mark.slow
async def test_active_alerts_are_the_firing_ones_the_matchers_select_silenced_too(
    alertmanager: Alertmanager, client: AlertmanagerClient
) -> None:
    # Values Alertmanager's filter parser must read back exactly: quotes, backslashes, a newline, UTF-8.
    group = {"alertname": "ResourceProxyPeersDown", "target": 'team-"b"\\db\nx', "cluster": "équipe"}
    started = datetime.now(UTC).replace(microsecond=123456) - timedelta(minutes=5)
    firing, silenced, resolved = ({**group, "pod": f"vc-{i}"} for i in range(3))
    elsewhere = {**firing, "cluster": "équipe-2"}
    await asyncio.to_thread(
        alertmanager.post_alerts,
        [
            {"labels": firing, "startsAt": started.isoformat()},
            {"labels": silenced, "startsAt": started.isoformat()},
            {"labels": elsewhere, "startsAt": started.isoformat()},
            {
                "labels": resolved,
                "startsAt": started.isoformat(),
                "endsAt": (started + timedelta(minutes=1)).isoformat(),
            },
        ],
    )
    now = datetime.now(UTC)
    silence = await client.create_silence(
        NewSilence(
            (Matcher("pod", "vc-1"), Matcher("cluster", "équipe")),
            now,
            now + timedelta(minutes=5),
            "t",
            "still listed active",
        )
    )
    await wait_silenced_by(alertmanager, silenced, silence)
    fingerprints = {
        alert["labels"]["pod"]: alert["fingerprint"]
        for alert in alertmanager.alerts()
        if alert["labels"].get("cluster") == "équipe"
    }
    listed = await client.active_alerts([Matcher(k, v) for k, v in group.items()])
    # The API writes times to the millisecond (the webhook to the nanosecond).
    to_ms = started.replace(microsecond=123000)
    assert sorted(listed) == sorted([(fingerprints["vc-0"], to_ms), (fingerprints["vc-1"], to_ms)])
    await client.expire_silence(silence)


@pytest.mark.slow
async def test_a_filter_alertmanager_refuses_is_an_upstream_error(client: AlertmanagerClient) -> None:
    with pytest.raises(UpstreamError, match=r"failed listing active alerts: HTTP 400: "):
        await client.active_alerts([Matcher("not-a-label-name", "x")])


class Recording(httpx.AsyncBaseTransport):
    """A fake transport that records requests and answers each with `status` and `body`."""

    def __init__(self, status: int = 200, body: bytes = b"[]") -> None:
        self.status, self.body = status, body
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(self.status, content=self.body)


def faked(
    transport: httpx.AsyncBaseTransport, url: str = "http://am.example:9093/prefix"
) -> AlertmanagerClient:
    return AlertmanagerClient.from_settings(AlertmanagerSettings(url=url), transport=transport)


@pytest.mark.parametrize(
    "hostile", ["../alerts", "%2e%2e/status", "x?y", "0000/../../api/v2/status", "", "ab#c", "../../-/reload"]
)
async def test_an_id_that_is_no_uuid_never_reaches_a_path(hostile: str) -> None:
    transport = Recording()
    with pytest.raises(InputError, match="not a silence id"):
        await faked(transport).expire_silence(hostile)
    assert transport.requests == []


async def test_paths_are_constants_under_the_configured_prefix() -> None:
    transport = Recording()
    am = faked(transport)
    await am.expire_silence("6B0E2A1C-8F44-4C31-9E55-2A6F0E1D7C11")
    await am.silences()
    assert [(r.method, r.url.path) for r in transport.requests] == [
        ("DELETE", "/prefix/api/v2/silence/6b0e2a1c-8f44-4c31-9e55-2a6f0e1d7c11"),
        ("GET", "/prefix/api/v2/silences"),
    ]


async def test_active_alerts_ask_for_every_unresolved_alert_the_matchers_select() -> None:
    transport = Recording(body=b'[{"fingerprint": "a1", "startsAt": "2023-11-14T22:00:00.123456789Z"}]')
    listed = await faked(transport).active_alerts([Matcher("alertname", "X"), Matcher("pod", 'a"\\b\nc')])
    assert listed == [("a1", datetime(2023, 11, 14, 22, 0, 0, 123456, tzinfo=UTC))]
    [request] = transport.requests
    assert (request.method, request.url.path) == ("GET", "/prefix/api/v2/alerts")
    assert request.url.params.multi_items() == [
        ("active", "true"),
        ("silenced", "true"),
        ("inhibited", "true"),
        ("unprocessed", "true"),
        ("filter", 'alertname="X"'),
        ("filter", 'pod="a\\"\\\\b\\nc"'),
    ]


async def test_active_alerts_of_the_wrong_shape_are_upstream_errors() -> None:
    for body in (b"{}", b'[{"fingerprint": "a1"}]', b'[{"fingerprint": "a1", "startsAt": "yesterday"}]'):
        with pytest.raises(
            UpstreamError, match=r"listing active alerts: (the answer is not a list|unexpected)"
        ):
            await faked(Recording(body=body)).active_alerts([])


async def test_answers_of_the_wrong_shape_are_upstream_errors() -> None:
    with pytest.raises(UpstreamError, match="listing silences: the answer is not JSON"):
        await faked(Recording(body=b"<html>")).silences()
    with pytest.raises(UpstreamError, match="listing silences: unexpected silence shape"):
        await faked(Recording(body=b'[{"id": "x"}]')).silences()
    with pytest.raises(UpstreamError, match="creating a silence: the answer carries no silenceID"):
        await faked(Recording(body=b"{}")).create_silence(NewSilence((Matcher("a", "b"),), NOW, NOW, "t", ""))
    with pytest.raises(UpstreamError, match=r"listing silences: HTTP 503: down for maintenance"):
        await faked(Recording(503, b"down   for\nmaintenance")).silences()


async def test_unreachable_alertmanager_is_named_without_its_credentials() -> None:
    am = faked(httpx.AsyncHTTPTransport(), url=f"http://ops:hunter2@127.0.0.1:{free_port()}")
    with pytest.raises(UpstreamError, match="could not connect") as caught:
        await am.silences()
    assert "hunter2" not in str(caught.value)
    assert str(caught.value).startswith("Alertmanager at http://127.0.0.1:")


async def test_a_hanging_alertmanager_times_out() -> None:
    gave_up = asyncio.Event()

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            await reader.read()  # never answers; returns when the client gives up and closes
        writer.close()
        await writer.wait_closed()
        gave_up.set()

    server = await asyncio.start_server(hang, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    am = AlertmanagerClient.from_settings(AlertmanagerSettings(url=f"http://127.0.0.1:{port}"), timeout=0.2)
    async with server:
        with pytest.raises(UpstreamError, match="listing silences: timed out"):
            await am.silences()
        await am.aclose()
        await asyncio.wait_for(gave_up.wait(), timeout=10)


async def test_active_alerts_give_up_after_their_own_short_timeout() -> None:
    gave_up = asyncio.Event()

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            await reader.read()
        writer.close()
        await writer.wait_closed()
        gave_up.set()

    server = await asyncio.start_server(hang, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    # The client's own timeout (for silences) is long; the check's is ACTIVE_TIMEOUT.
    am = AlertmanagerClient.from_settings(AlertmanagerSettings(url=f"http://127.0.0.1:{port}"), timeout=30.0)
    async with server:
        started = time.monotonic()
        with pytest.raises(UpstreamError, match="listing active alerts: timed out"):
            await am.active_alerts([Matcher("alertname", "X")])
        assert ACTIVE_TIMEOUT <= time.monotonic() - started < ACTIVE_TIMEOUT + 3
        await am.aclose()
        await asyncio.wait_for(gave_up.wait(), timeout=10)


async def test_settings_without_url_and_empty_or_naive_silences_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"alertmanager\.url"):
        AlertmanagerClient.from_settings(AlertmanagerSettings())
    transport = Recording()
    with pytest.raises(InputError, match="at least one matcher"):
        await faked(transport).create_silence(NewSilence((), NOW, NOW, "t", ""))
    naive = datetime(2026, 1, 1)
    with pytest.raises(InputError, match="time zone"):
        await faked(transport).create_silence(NewSilence((Matcher("a", "b"),), naive, naive, "t", ""))
    assert transport.requests == []


# -- group keys and matchers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "labels"),
    [
        ('{}:{alertname="A", target="p/n"}', {"alertname": "A", "target": "p/n"}),
        ('{}/{severity="critical"}:{alertname="A"}', {"alertname": "A"}),
        ('{}:{alertname="A:{x=\\"y\\"}"}', {"alertname": 'A:{x="y"}'}),
        ('{}:{note="tab\\tand\\\\slash"}', {"note": "tab\tand\\slash"}),
        ("{}:{}", {}),
    ],
)
def test_group_labels_are_read_from_the_end_of_the_group_key(key: str, labels: dict[str, str]) -> None:
    assert group_labels_from_key(key) == labels


@pytest.mark.parametrize("key", ["", "no labels", "{}:{a=unquoted}", '{}:{a="open}'])
def test_a_group_key_without_a_label_set_is_refused(key: str) -> None:
    with pytest.raises(InputError):
        group_labels_from_key(key)


def test_matchers_are_equal_when_shared_and_an_escaped_alternation_when_not() -> None:
    found = matchers_for(
        [{"target": "p/n", "pod": "a.b"}, {"target": "p/n", "pod": "c|d"}, {"target": "p/n"}],
        ["pod", "target", "group_version"],
    )
    assert found == (Matcher("pod", r"|a\.b|c\|d", is_regex=True), Matcher("target", "p/n"))
    # For people: the literals, without the regex's escapes (they were shown doubled once).
    assert [str(m) for m in found] == ['pod is one of (unset), "a.b", "c|d"', 'target="p/n"']


def test_a_regex_that_is_not_an_alternation_of_literals_shows_its_backslashes_once() -> None:
    assert str(Matcher("pod", r"team-a-\d+", is_regex=True)) == 'pod=~"team-a-\\d+"'
    assert str(Matcher("pod", r"a\.b|c", is_regex=True, is_equal=False)) == 'pod is none of "a.b", "c"'


async def test_the_bots_own_credentials_and_ca_reach_an_alertmanager_that_needs_them(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("am-token")

    def wants_token(request: Request) -> tuple[int, Any]:
        if request.headers.get("authorization") != "Bearer am-token":
            return 401, b"Unauthorized\n"
        return 200, []

    with LocalServer(wants_token, tls=True) as server:
        # webhook_token is how Alertmanager authenticates to the bot: never sent to Alertmanager.
        settings = {"url": server.url, "ca_file": str(server.ca_path), "webhook_token": "inbound"}
        calling = {**settings, "bearer_token_file": str(tmp_path / "token")}
        am = AlertmanagerClient.from_settings(AlertmanagerSettings.model_validate(calling))
        anonymous = AlertmanagerClient.from_settings(AlertmanagerSettings.model_validate(settings))
        try:
            assert await am.silences() == []
            with pytest.raises(UpstreamError, match=r"listing silences: HTTP 401: Unauthorized"):
                await anonymous.silences()
        finally:
            await am.aclose()
            await anonymous.aclose()
    assert [r.headers.get("authorization") for r in server.requests] == ["Bearer am-token", None]
