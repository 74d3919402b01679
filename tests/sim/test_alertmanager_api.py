"""The Alertmanager stand-in against the real one (Debian's 0.25): the same requests sent to both, in the
same order, answer with the same status codes, the same shapes and the same words.

Both hold the same two alerts (the real one as pushed by a Prometheus, the stand-in's as its `held()`
lists them); each side's silence ids are its own, substituted where a later request names one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from sim.alerting import ManagedAlert
from sim.alertmanager_api import AlertmanagerApi
from tests.harness.alertmanager import Alertmanager

pytestmark = pytest.mark.slow

ALERTS: tuple[tuple[dict[str, str], dict[str, str]], ...] = (
    ({"alertname": "A", "cluster": "c", "target": "platform/t1"}, {"summary": "s"}),
    ({"alertname": "B", "cluster": "c", "target": "platform/t2"}, {}),
)
UNKNOWN = "6a8c5e0c-1f51-4b8e-9c0e-2d2a4d0f8a11"
TIMEOUT = 10.0


@dataclass
class Side:
    """One Alertmanager under test: its URL and the silence ids it gave, by the step that made them."""

    url: str
    ids: dict[str, str]

    def send(self, method: str, path: str, *, body: Any = None, params: Any = None) -> httpx.Response:
        for name, given in self.ids.items():
            path = path.replace(f"{{{name}}}", given)
            if isinstance(body, dict) and body.get("id") == f"{{{name}}}":
                body = {**body, "id": given}
        return httpx.request(method, self.url + path, json=body, params=params, timeout=TIMEOUT)


@pytest.fixture
def sides(tmp_path: Path) -> Iterator[tuple[Side, Side]]:
    now = time.time()
    held = [
        ManagedAlert(labels, notes, now, None, "http://prometheus.sim:9090/graph") for labels, notes in ALERTS
    ]
    with (
        Alertmanager(tmp_path, "http://127.0.0.1:9/alertmanager") as real,
        AlertmanagerApi(lambda: held) as stand_in,
    ):
        pushed = [
            {"labels": labels, "annotations": notes, "generatorURL": "http://prometheus.sim:9090/graph"}
            for labels, notes in ALERTS
        ]
        real.post_alerts(pushed)
        yield Side(real.url, {}), Side(stand_in.url, {})


def at(offset: float) -> str:
    return datetime.fromtimestamp(time.time() + offset, UTC).isoformat()


def silence(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "matchers": [{"name": "target", "value": "platform/t1", "isRegex": False, "isEqual": True}],
        "startsAt": at(-3600),  # in the past: becomes now
        "endsAt": at(3600),
        "createdBy": "you (Slack U0DEMO001)",
        "comment": "rebuilding",
    }
    return {k: v for k, v in {**body, **changes}.items() if v is not None}


def shape(value: Any) -> Any:
    """The JSON's structure: keys and types, lists by their items' shapes."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return sorted({repr(shape(v)) for v in value})
    return type(value).__name__


def both(sides: tuple[Side, Side], method: str, path: str, **options: Any) -> tuple[Any, Any]:
    real, stand_in = (side.send(method, path, **options) for side in sides)
    assert real.status_code == stand_in.status_code, (path, options, real.text, stand_in.text)
    answers = [r.json() if r.content else None for r in (real, stand_in)]
    assert shape(answers[0]) == shape(answers[1]), (path, options, answers)
    return answers[0], answers[1]


def same_words(sides: tuple[Side, Side], method: str, path: str, **options: Any) -> None:
    real, stand_in = both(sides, method, path, **options)
    assert real == stand_in


def refused_silences() -> list[dict[str, Any]]:
    hour = at(3600)
    return [
        silence(matchers=[]),
        silence(createdBy=None),
        silence(comment=None),
        silence(matchers=[{"name": "target", "value": "x"}]),  # isRegex missing
        silence(startsAt=at(7200), endsAt=at(3600)),
        silence(startsAt=hour, endsAt=hour),
        silence(startsAt=at(-7200), endsAt=at(-3600)),
        silence(matchers=[{"name": "1target", "value": "x", "isRegex": False}]),
        silence(matchers=[{"name": "target", "value": "", "isRegex": False}]),
        silence(matchers=[{"name": "target", "value": ".*", "isRegex": True}]),
        silence(id=UNKNOWN),
    ]


def test_refusals_have_alertmanagers_codes_and_words(sides: tuple[Side, Side]) -> None:
    for body in refused_silences():
        same_words(sides, "POST", "/api/v2/silences", body=body)
    real, stand_in = both(
        sides,
        "POST",
        "/api/v2/silences",
        body=silence(matchers=[{"name": "a", "value": "(", "isRegex": True}]),
    )
    prefix = 'silence invalid: invalid label matcher 0: invalid regular expression "(": error parsing regexp:'
    assert real.startswith(prefix)
    assert stand_in.startswith(prefix)
    for path in ("/api/v2/silence/not-a-uuid", f"/api/v2/silence/{UNKNOWN}"):
        same_words(sides, "DELETE", path)
    for path in ("/api/v2/silences", "/api/v2/alerts"):
        same_words(sides, "GET", path, params={"filter": "{target"})
    real, stand_in = both(sides, "GET", "/api/v2/alerts", params={"filter": 'target=~"("'})
    # Go's and Python's regex parsers word the reason apart; the sentence around it is the same.
    assert real.startswith("error parsing regexp: missing closing )")
    assert stand_in.startswith("error parsing regexp: ")
    assert stand_in.endswith(": `^(?:()$`")
    same_words(sides, "GET", "/api/v2/nothing-here")


def test_silences_made_listed_updated_and_expired_alike(sides: tuple[Side, Side]) -> None:
    for name, body in (
        ("made", silence()),
        ("pending", silence(startsAt=at(3600), endsAt=at(7200), comment="later")),
        ("gone", silence(comment="to expire")),
    ):
        answers = both(sides, "POST", "/api/v2/silences", body=body)
        for side, answer in zip(sides, answers, strict=True):
            side.ids[name] = answer["silenceID"]
    both(sides, "DELETE", "/api/v2/silence/{gone}")
    both(sides, "DELETE", "/api/v2/silence/{gone}")  # already expired: still 200
    # Pending: changed in place (its id kept); expired: a new silence (a new id).
    kept = both(
        sides, "POST", "/api/v2/silences", body=silence(id="{pending}", startsAt=at(3600), endsAt=at(9000))
    )
    assert [k["silenceID"] for k in kept] == [s.ids["pending"] for s in sides]
    renewed = both(sides, "POST", "/api/v2/silences", body=silence(id="{gone}", comment="again"))
    assert all(r["silenceID"] != s.ids["gone"] for r, s in zip(renewed, sides, strict=True))

    listed = both(sides, "GET", "/api/v2/silences")
    real, stand_in = ([(s["status"]["state"], s["comment"]) for s in answer] for answer in listed)
    assert real == stand_in
    assert sorted(real) == [
        ("active", "again"),
        ("active", "rebuilding"),
        ("expired", "to expire"),
        ("pending", "rebuilding"),
    ]
    for answer in listed:
        made = next(s for s in answer if s["comment"] == "rebuilding" and s["status"]["state"] == "active")
        assert made["startsAt"] == made["updatedAt"]  # a start in the past became now
        assert made["createdBy"] == "you (Slack U0DEMO001)"
    regex = {"name": "target", "value": "platform/.*", "isRegex": True, "isEqual": True}
    both(sides, "POST", "/api/v2/silences", body=silence(matchers=[regex], comment="every target"))
    for wanted in (
        'target="platform/t1"',
        'target!="platform/t1"',
        'target=~"platform/.*"',
        "target=~platform/.*",
        'target="platform/.*"',
        'other=""',
    ):
        filtered = both(sides, "GET", "/api/v2/silences", params={"filter": wanted})
        real, stand_in = ([(s["status"]["state"], s["comment"]) for s in answer] for answer in filtered)
        assert real == stand_in, wanted


def test_alerts_listed_with_their_silences_as_the_bot_asks(sides: tuple[Side, Side]) -> None:
    answers = both(sides, "POST", "/api/v2/silences", body=silence())
    for side, answer in zip(sides, answers, strict=True):
        side.ids["made"] = answer["silenceID"]
    queries: list[list[tuple[str, str]]] = [
        [],
        [("active", "true"), ("silenced", "true"), ("inhibited", "true"), ("unprocessed", "true")],
        [("silenced", "false")],
        [("active", "false")],
        [("filter", 'alertname="A"'), ("filter", 'cluster="c"'), ("filter", 'target="platform/t1"')],
        [("filter", 'target=~"platform/t.*"'), ("filter", 'alertname!="A"')],
    ]
    for params in queries:
        listed = both(sides, "GET", "/api/v2/alerts", params=params)
        real, stand_in = (
            [
                (a["labels"], a["fingerprint"], a["status"]["state"], len(a["status"]["silencedBy"]))
                for a in answer
            ]
            for answer in listed
        )
        assert real == stand_in, params
    ready = [side.send("GET", "/-/ready") for side in sides]
    assert [(r.status_code, r.text) for r in ready] == [(200, "OK")] * 2
