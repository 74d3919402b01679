"""The snapshot's indexed, remembered lookups answer what a scan of every series answers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.domain.snapshot import PEERS, REQUESTS, Labels, ProxySnapshot, label, make_labels, matches

TARGETS = ["a/one", "a/two", "b/three"]
GVS = ["x.io/v1", "y.io/v2"]


@st.composite
def snapshots(draw: st.DrawFn) -> ProxySnapshot:
    samples: dict[str, dict[Labels, float]] = {}
    for name in (PEERS, REQUESTS):
        rows = draw(
            st.lists(
                st.tuples(
                    st.sampled_from([*TARGETS, None]),
                    st.sampled_from([*GVS, None]),
                    st.sampled_from(["healthy", "quarantined", "ok"]),
                    st.floats(0, 10),
                ),
                max_size=12,
            )
        )
        for target, gv, other, value in rows:
            pairs = [("state", other)]
            pairs += [] if target is None else [("target", target)]
            pairs += [] if gv is None else [("group_version", gv)]
            samples.setdefault(name, {})[make_labels(pairs)] = value
    return ProxySnapshot(samples=samples)


def scanned(snapshot: ProxySnapshot, name: str, **match: str) -> dict[Labels, float]:
    return {k: v for k, v in snapshot.samples.get(name, {}).items() if matches(k, match)}


@given(
    snapshots(),
    st.sampled_from([PEERS, REQUESTS, "vcluster_proxy_absent"]),
    st.sampled_from([*TARGETS, "c/none", None]),
    st.sampled_from([*GVS, None]),
    st.sampled_from(["healthy", None]),
)
def test_a_lookup_is_what_a_scan_finds(
    snapshot: ProxySnapshot, name: str, target: str | None, gv: str | None, state: str | None
) -> None:
    match = {k: v for k, v in (("target", target), ("group_version", gv), ("state", state)) if v}
    for _ in range(2):  # asked again: the remembered answer
        assert snapshot.series(name, **match) == scanned(snapshot, name, **match)


@given(snapshots())
def test_targets_are_every_target_named_and_a_copy(snapshot: ProxySnapshot) -> None:
    named = {label(k, "target") for family in snapshot.samples.values() for k in family}
    expected = sorted(t for t in named if t is not None)
    first = snapshot.targets()
    assert first == expected
    first.append("changed/by-caller")
    assert snapshot.targets() == expected
