"""Which silences cover a message, and the watch that edits a message once per change of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from bot.alerts.silences import SilenceWatch, covering, matches, shown
from bot.domain.alerts import AlertStatus
from bot.domain.silences import Matcher, Silence
from bot.errors import UpstreamError
from bot.store.models import AlertGroupState, GroupFacts

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
LABELS = ({"alertname": "ResourceProxyNoHealthyPeers", "target": "platform/crd-store", "pod": "vc-0"},)


def silence(sid: str, *matchers: Matcher, state: str = "active", hours: float = 1.0) -> Silence:
    return Silence(sid, state, matchers, NOW, NOW + timedelta(hours=hours), "alice (Slack U0ALICE01)", "why")


def test_matchers_select_as_alertmanager_does() -> None:
    labels = LABELS[0]
    assert matches(Matcher("target", "platform/crd-store"), labels)
    assert not matches(Matcher("target", "platform/crd"), labels)
    assert matches(Matcher("pod", r"vc-\d", is_regex=True), labels)
    assert not matches(Matcher("pod", "vc", is_regex=True), labels), "anchored"
    assert matches(Matcher("pod", "vc-1", is_equal=False), labels)
    assert matches(Matcher("missing", ""), labels), "a missing label is empty"
    assert not matches(Matcher("pod", "(", is_regex=True), labels)


def test_the_message_shows_the_active_silence_that_ends_last() -> None:
    target = Matcher("target", "platform/crd-store")
    found = covering(
        [
            silence("a", target, hours=1),
            silence("b", target, hours=4),
            silence("c", target, state="expired", hours=9),
            silence("d", Matcher("target", "other/x")),
        ],
        LABELS,
    )
    assert [s.id for s in found] == ["a", "b", "c"]
    assert shown(found) == silence("b", target, hours=4)
    assert covering([silence("a", target)], ()) == [], "a message without stored labels shows none"


@dataclass
class Source:
    listed: list[Silence] = field(default_factory=list)
    error: Exception | None = None

    async def silences(self) -> list[Silence]:
        if self.error is not None:
            raise self.error
        return list(self.listed)


@dataclass
class Posts:
    groups: list[AlertGroupState]

    async def firing_posts(self) -> list[AlertGroupState]:
        return self.groups


@dataclass
class Edits:
    updates: list[tuple[str, str]] = field(default_factory=list)

    async def show_again(self, channel: str, group_key: str, revision: str) -> None:
        self.updates.append((group_key, revision))


async def test_the_watch_edits_a_message_once_per_change_of_its_silences() -> None:
    group = AlertGroupState(
        "#alerts", "g", AlertStatus.FIRING, ts="1.1", facts=GroupFacts(firing_labels=LABELS)
    )
    source, edits = Source(), Edits()
    watch = SilenceWatch(source, Posts([group]), edits, every=15.0)
    await watch.refresh()
    assert edits.updates == [], "no silence, first sight: nothing to change"
    made = silence("a", Matcher("target", "platform/crd-store"))
    source.listed = [made]
    await watch.refresh()
    await watch.refresh()
    assert len(edits.updates) == 1
    assert watch.shown_for(LABELS) == made
    source.listed = [silence("a", Matcher("target", "platform/crd-store"), state="expired")]
    await watch.refresh()
    assert len(edits.updates) == 2, "expired (by time, amtool or the button): edited again"
    assert watch.shown_for(LABELS) is None
    assert len({revision for _, revision in edits.updates}) == 2


async def test_alertmanager_down_keeps_the_last_read() -> None:
    made = silence("a", Matcher("target", "platform/crd-store"))
    source = Source([made])
    watch = SilenceWatch(source, Posts([]), Edits(), every=15.0)
    await watch.refresh()
    source.error = UpstreamError("Alertmanager at http://am: could not connect")
    await watch.refresh()
    assert watch.shown_for(LABELS) == made
