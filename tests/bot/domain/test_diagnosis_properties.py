"""Whatever a proxy page holds, diagnosis answers: never raises, worst first, every target covered."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain.diagnosis import diagnose, diagnose_alert
from bot.domain.findings import Severity
from bot.domain.snapshot import (
    ACTIVE_WATCHES,
    ALL_QUARANTINED,
    DIAL_FAILURES,
    DISCOVERY_FALLBACKS,
    INFLIGHT,
    PEER_CACHE_SYNCED,
    PEER_LIST_AGE,
    PEERS,
    QUARANTINES,
    RECOVERIES,
    REQUESTS,
    TERMINATIONS,
    WATCH_EVENTS,
    Labels,
    ProxySnapshot,
    make_labels,
)
from tests.bot.domain.diagnosis_pages import Page, window

NAMES = [
    PEERS,
    PEER_CACHE_SYNCED,
    PEER_LIST_AGE,
    INFLIGHT,
    ACTIVE_WATCHES,
    REQUESTS,
    TERMINATIONS,
    DISCOVERY_FALLBACKS,
    QUARANTINES,
    ALL_QUARANTINED,
    RECOVERIES,
    DIAL_FAILURES,
    WATCH_EVENTS,
]

labels = st.builds(
    lambda target, gv, state, reason, code: make_labels(
        [("target", target), ("group_version", gv), ("state", state), ("reason", reason), ("code", code)]
    ),
    st.sampled_from(["p/a", "p/b"]),
    st.sampled_from(["a.io/v1", "b.io/v1"]),
    st.sampled_from(["healthy", "quarantined", "half_open", "weird"]),
    st.sampled_from(["no_peer", "timeout", "canceled", "ownership_masked", "upstream", "new_reason", ""]),
    st.sampled_from(["200", "404", "503", ""]),
)
values = st.one_of(
    st.floats(min_value=0, max_value=1e6), st.sampled_from([0.0, 1.0, float("inf"), float("nan")])
)
pages = st.dictionaries(st.sampled_from(NAMES), st.dictionaries(labels, values, max_size=6), max_size=8)


def snap(samples: dict[str, dict[Labels, float]]) -> ProxySnapshot:
    return ProxySnapshot(samples=samples)


@settings(max_examples=150, deadline=None)
@given(pages, pages, st.floats(min_value=1, max_value=86400))
def test_diagnose_never_raises_and_orders_worst_first(
    before: dict[str, dict[Labels, float]], after: dict[str, dict[Labels, float]], seconds: float
) -> None:
    now = snap(after)
    win = window(Page(samples=before), Page(samples=after), seconds)
    for w in (None, win):
        found = diagnose(now, w)
        severities = [f.severity for f in found]
        assert severities == sorted(severities, reverse=True)
        assert {f.target for f in found} == set(now.targets())
        for target in now.targets():
            mine = [f for f in found if f.target == target]
            # Either something worth a look, or exactly one OK finding saying it is healthy.
            oks = [f for f in mine if f.severity is Severity.OK]
            assert len(oks) == (1 if max(f.severity for f in mine) <= Severity.INFO else 0)
        assert len({f.key for f in found}) == len(found)


@settings(max_examples=60, deadline=None)
@given(pages, st.sampled_from(["ResourceProxyNoHealthyPeers", "ResourceProxyPeerChurn", "Other"]), labels)
def test_diagnose_alert_never_raises(
    after: dict[str, dict[Labels, float]], alertname: str, alert_labels: Labels
) -> None:
    d = diagnose_alert(alertname, dict(alert_labels), snap(after))
    assert d.now
