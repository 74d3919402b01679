"""The webhook v4 models: real Alertmanager 0.25 bodies parse, bad ones name the field, identity is stable."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.alerts import AlertStatus, parse_webhook
from bot.errors import InputError
from tests.bot.domain import alertmanager_samples as samples

Mutation = Callable[[dict[str, Any]], None]


def mutated(body: bytes, mutate: Mutation) -> bytes:
    payload = samples.as_dict(body)
    mutate(payload)
    return samples.encode(payload)


def refusal(raw: bytes) -> str:
    with pytest.raises(InputError) as caught:
        parse_webhook(raw)
    return str(caught.value)


def test_a_real_firing_notification_parses_with_every_field() -> None:
    webhook = parse_webhook(samples.FIRING)
    assert webhook.version == "4"
    assert webhook.group_key == samples.GROUP_KEY
    assert webhook.status is AlertStatus.FIRING
    assert webhook.receiver == "proxybot"
    assert webhook.external_url == "http://vm:38095"
    assert webhook.group_labels == {"alertname": "ResourceProxyNoHealthyPeers", "target": "team-a/billing"}
    assert webhook.common_labels["pod"] == "vc-0"
    assert webhook.common_annotations == {}
    assert webhook.truncated_alerts == 0
    assert [alert.fingerprint for alert in webhook.alerts] == [samples.FINGERPRINT_A, samples.FINGERPRINT_B]
    first = webhook.alerts[0]
    assert first.alertname == "ResourceProxyNoHealthyPeers"
    assert first.labels["group_version"] == "a.example.com/v1"
    assert first.annotations["summary"].startswith("Resource proxy target team-a/billing")
    assert first.generator_url == "http://prom:9090/graph?g0.expr=x"
    # Nanoseconds are cut to Python's microseconds; the instant is otherwise exact and in UTC.
    assert first.starts_at == datetime(2026, 11, 30, 9, 10, 41, 42956, tzinfo=UTC)


def test_a_firing_alert_has_no_end_and_a_resolved_one_has_its_end() -> None:
    webhook = parse_webhook(samples.ONE_RESOLVED)
    resolved, firing = webhook.alerts
    assert firing.firing
    assert firing.ends_at is None
    assert not resolved.firing
    assert resolved.ends_at == datetime(2026, 11, 30, 9, 10, 43, 45217, tzinfo=UTC)
    assert webhook.firing() == [firing]
    assert webhook.resolved() == [resolved]


def test_an_all_resolved_notification_is_resolved() -> None:
    webhook = parse_webhook(samples.ALL_RESOLVED)
    assert webhook.status is AlertStatus.RESOLVED
    assert webhook.firing() == []


def test_fields_a_later_alertmanager_might_add_are_ignored() -> None:
    def add_fields(payload: dict[str, Any]) -> None:
        payload["groupID"] = "abc"
        payload["alerts"][0]["silencedBy"] = ["x"]

    webhook = parse_webhook(mutated(samples.FIRING, add_fields))
    assert webhook == parse_webhook(samples.FIRING)


def test_truncated_alerts_are_accepted_and_counted() -> None:
    webhook = parse_webhook(mutated(samples.FIRING, lambda p: p.update(truncatedAlerts=37)))
    assert webhook.truncated_alerts == 37


def test_optional_fields_may_be_missing() -> None:
    def strip(payload: dict[str, Any]) -> None:
        for key in ("receiver", "groupLabels", "commonLabels", "commonAnnotations", "externalURL"):
            del payload[key]
        for key in ("annotations", "endsAt", "generatorURL"):
            del payload["alerts"][0][key]

    webhook = parse_webhook(mutated(samples.FIRING, strip))
    assert webhook.receiver == ""
    assert webhook.alerts[0].ends_at is None
    assert webhook.alerts[0].annotations == {}


def _set(path: tuple[str | int, ...], value: Any) -> Mutation:
    def mutate(payload: dict[str, Any]) -> None:
        node: Any = payload
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return mutate


def _delete(path: tuple[str | int, ...]) -> Mutation:
    def mutate(payload: dict[str, Any]) -> None:
        node: Any = payload
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]

    return mutate


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_set(("alerts", 1, "startsAt"), "yesterday"), "alerts[1].startsAt: "),
        (
            _set(("alerts", 0, "startsAt"), "2026-11-30T09:10:41"),
            "alerts[0].startsAt: Input should have timezone",
        ),
        (_set(("alerts", 1, "endsAt"), 5), "alerts[1].endsAt: "),
        (_set(("alerts", 1, "startsAt"), 1700000000), "alerts[1].startsAt: "),
        (
            _set(("alerts", 1, "labels", "severity"), 2),
            "alerts[1].labels.severity: Input should be a valid string",
        ),
        (_set(("alerts", 0, "annotations"), []), "alerts[0].annotations: "),
        (
            _set(("alerts", 0, "status"), "pending"),
            "alerts[0].status: Input should be 'firing' or 'resolved'",
        ),
        (_set(("alerts", 0, "fingerprint"), ""), "alerts[0].fingerprint: "),
        (_delete(("alerts", 1, "fingerprint")), "alerts[1].fingerprint: Field required"),
        (_set(("alerts",), []), "alerts: List should have at least 1 item"),
        (_set(("alerts",), {"0": {}}), "alerts: Input should be a valid array"),
        (_delete(("groupKey",)), "groupKey: Field required"),
        (_set(("status",), "FIRING"), "status: "),
        (_set(("truncatedAlerts",), "3"), "truncatedAlerts: Input should be a valid integer"),
        (_set(("truncatedAlerts",), -1), "truncatedAlerts: Input should be greater than or equal to 0"),
        (_set(("commonLabels",), {"a": None}), "commonLabels.a: "),
    ],
)
def test_a_malformed_payload_is_refused_naming_the_field(mutate: Mutation, expected: str) -> None:
    assert refusal(mutated(samples.FIRING, mutate)).startswith(expected)


@pytest.mark.parametrize("version", ["3", "5", 4, None, ""])
def test_only_version_4_is_accepted(version: Any) -> None:
    message = refusal(mutated(samples.FIRING, _set(("version",), version)))
    assert message == "version: expected '4' (Alertmanager webhook version 4)"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", "body: Invalid JSON"),
        (b"{", "body: Invalid JSON"),
        (b"\xff\xfe{}", "body: Invalid JSON"),
        (b"[]", "body: Input should be an object"),
        (b"null", "body: Input should be an object"),
        (b"[" * 100_000, "body: Invalid JSON: recursion limit exceeded"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_refused(raw: bytes, expected: str) -> None:
    assert refusal(raw).startswith(expected)


def test_the_refusal_never_repeats_the_offending_value() -> None:
    leaked = "hunter2-very-secret"
    message = refusal(mutated(samples.FIRING, _set(("alerts", 0, "labels"), {"password": [leaked]})))
    assert message.startswith("alerts[0].labels.password: ")
    assert leaked not in message


def test_many_problems_are_summarised() -> None:
    def break_all(payload: dict[str, Any]) -> None:
        payload["alerts"] = [{"status": "?"}] * 4

    message = refusal(mutated(samples.FIRING, break_all))
    assert message.count(";") == 5
    assert message.endswith("more")


# -- identity -----------------------------------------------------------------------------------------


def identity(body: bytes) -> str:
    return parse_webhook(body).identity()


def test_an_ha_peer_copy_of_a_notification_has_the_same_identity() -> None:
    for body in (samples.FIRING, samples.ONE_RESOLVED, samples.ALL_RESOLVED):
        copy = samples.ha_peer_copy(body)
        assert copy != body
        assert identity(copy) == identity(body)


def test_the_steps_of_a_group_are_different_notifications() -> None:
    identities = {identity(body) for body in (samples.FIRING, samples.ONE_RESOLVED, samples.ALL_RESOLVED)}
    assert len(identities) == 3


@pytest.mark.parametrize(
    "mutate",
    [
        _set(("groupKey",), '{}:{alertname="Other"}'),
        _set(("status",), "resolved"),
        _set(("truncatedAlerts",), 2),
        _set(("alerts", 0, "startsAt"), "2026-11-30T10:00:00Z"),
        _set(("alerts", 0, "fingerprint"), "ffffffffffffffff"),
        _set(("alerts", 0, "status"), "resolved"),
        _set(("alerts", 0, "endsAt"), "2026-11-30T10:00:00Z"),
        _delete(("alerts", 1)),
    ],
)
def test_what_changes_the_notification_changes_its_identity(mutate: Mutation) -> None:
    assert identity(mutated(samples.FIRING, mutate)) != identity(samples.FIRING)


@pytest.mark.parametrize(
    "mutate",
    [
        _set(("alerts", 0, "annotations", "summary"), "re-templated text"),
        _set(("commonAnnotations",), {"summary": "x"}),
        _set(("alerts", 0, "generatorURL"), "http://prometheus-1:9090/graph"),
        _set(("alerts", 0, "startsAt"), "2026-11-30T10:10:41.042956449+01:00"),
        _set(("alerts", 0, "endsAt"), None),
    ],
)
def test_what_does_not_change_the_notification_keeps_its_identity(mutate: Mutation) -> None:
    assert identity(mutated(samples.FIRING, mutate)) == identity(samples.FIRING)


# -- never anything but InputError ---------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def _parses_or_refuses(raw: bytes) -> None:
    message = ""
    try:
        parse_webhook(raw)
    except InputError as error:
        message = str(error)
        assert message, "a refusal always says why"


@given(st.binary(max_size=300))
def test_arbitrary_bytes_parse_or_are_refused_cleanly(raw: bytes) -> None:
    _parses_or_refuses(raw)


@given(json_values)
def test_arbitrary_json_parses_or_is_refused_cleanly(value: Any) -> None:
    _parses_or_refuses(json.dumps(value).encode())


@given(
    st.sampled_from(["alerts", "groupKey", "status", "version", "truncatedAlerts", "commonLabels"]),
    json_values,
)
def test_a_real_body_with_one_field_replaced_parses_or_is_refused_cleanly(field: str, value: Any) -> None:
    _parses_or_refuses(mutated(samples.FIRING, _set((field,), value)))
