"""The blast radius of a target: each client's reach read from its own peer caches, and the one line."""

from __future__ import annotations

from bot.domain.alert_summary import PeerReading
from bot.domain.blast import BlastRadius, ClientReach, Reach, client_reach

TARGET = "platform/crd-store"
GV1, GV2 = "example.com/v1", "data.example.com/v1alpha1"


def cache(gv: str, healthy: float, synced: bool | None = True, replica: str = "r-0") -> PeerReading:
    return PeerReading(TARGET, gv, healthy, 0.0 if healthy else 1.0, 0.0, synced, replica)


def test_a_client_lost_the_target_when_a_group_version_has_no_healthy_peer_on_every_replica() -> None:
    lost = client_reach("team-a", [GV1, GV2], [cache(GV1, 0), cache(GV2, 1)], TARGET)
    assert lost == ClientReach("team-a", Reach.LOST, lost=(GV1,))
    # One replica still holding a healthy peer: the client reaches it.
    split = client_reach(
        "team-a", [GV1], [cache(GV1, 0, replica="r-0"), cache(GV1, 1, replica="r-1")], TARGET
    )
    assert split.reach is Reach.HEALTHY


def test_an_unsynced_cache_with_healthy_peers_still_reaches_the_target_and_says_so() -> None:
    found = client_reach("team-a", [GV1], [cache(GV1, 1, synced=False)], TARGET)
    assert found.reach is Reach.HEALTHY
    assert found.words() == f"still healthy; peer cache unsynced for {GV1}"


def test_a_client_not_read_or_reporting_nothing_is_unknown_with_why() -> None:
    assert client_reach("team-a", [GV1], None, TARGET, "timed out after 2 s").words() == (
        "not read: timed out after 2 s"
    )
    other = PeerReading("platform/other", GV1, 1.0, 0.0, 0.0, True)
    assert client_reach("team-a", [GV1], [other], TARGET).reach is Reach.UNKNOWN


def test_the_sentence_names_the_clients_hit_with_what_they_lost_then_the_healthy_one() -> None:
    hit = [ClientReach(name, Reach.LOST, lost=(GV1, GV2)) for name in ("team-a", "team-b", "team-c")]
    radius = BlastRadius(TARGET, (*hit, ClientReach("team-d", Reach.HEALTHY)))
    assert radius.sentence() == (
        "3 of 4 clients cannot reach platform/crd-store: "
        f"team-a ({GV1}, {GV2}: no healthy peers), team-b ({GV1}, {GV2}: no healthy peers), "
        f"team-c ({GV1}, {GV2}: no healthy peers); team-d still healthy"
    )
    assert radius.shown
    assert radius.sentence(each=False) == (
        f"3 of 4 clients cannot reach platform/crd-store ({GV1}, {GV2}: no healthy peers): "
        "team-a, team-b, team-c; team-d still healthy"
    )
    assert radius.names(Reach.LOST) == ("team-a", "team-b", "team-c")


def test_the_sentence_when_all_or_none_are_hit_and_with_clients_not_read() -> None:
    all_hit = BlastRadius(
        TARGET, (ClientReach("a", Reach.LOST, lost=(GV1,)), ClientReach("b", Reach.LOST, lost=(GV1,)))
    )
    assert all_hit.sentence().startswith("all 2 clients cannot reach platform/crd-store: a (")
    none = BlastRadius(TARGET, (ClientReach("a", Reach.HEALTHY), ClientReach("b", Reach.UNKNOWN, why="x")))
    assert none.sentence() == "none of the 2 clients of platform/crd-store has lost it; b not read"
    assert not BlastRadius(TARGET, (ClientReach("a", Reach.LOST, lost=(GV1,)),)).shown


def test_many_clients_are_bounded_in_the_sentence() -> None:
    hit = tuple(ClientReach(f"team-{i:02d}", Reach.LOST, lost=(GV1,)) for i in range(40))
    sentence = BlastRadius(TARGET, hit).sentence()
    assert sentence.endswith("+34 more")
    assert len(sentence) < 400
