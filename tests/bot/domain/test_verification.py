"""A verification's outcome and the sentence its reply says."""

from __future__ import annotations

from bot.domain.probe_result import LivePointer, ProbeOutcome
from bot.domain.verification import Recheck, Verdict, VerificationOutcome, failure_words, flapping, judged

AT = 1_700_000_000.0  # 22:13 UTC


def ok(cluster: str, ms: float, path: str | None = "likely direct", target: str = "crd-store") -> Recheck:
    return Recheck(cluster, target, True, 200, ms / 1000, path=path)


def test_every_client_answering_is_verified_with_the_slowest_answer_and_the_path() -> None:
    verdict = judged([ok("team-a", 14), ok("team-b", 21), ok("team-c", 9)], AT)
    assert verdict.outcome is VerificationOutcome.VERIFIED
    assert verdict.sentence == "verified 22:13 UTC: probe 200 in 21 ms from 3 clients, direct path"
    relayed = judged([ok("team-a", 14, "likely relayed")], AT).sentence
    assert relayed == "verified 22:13 UTC: probe 200 in 14 ms from team-a, relayed path"
    assert judged([ok("team-a", 14, None)], AT).sentence.endswith("from team-a, path not checked")
    assert judged([ok("team-a", 14, "unknown")], AT).sentence.endswith("from team-a, path not judged")


def test_one_client_still_failing_makes_it_unverified_naming_that_client() -> None:
    down = Recheck("team-b", "crd-store", False, 503, None, failure="no healthy peers")
    verdict = judged([ok("team-a", 14), down], AT)
    assert verdict.outcome is VerificationOutcome.UNVERIFIED
    assert verdict.sentence == "resolved, but the probe from team-b still fails (503 no healthy peers)"
    timed_out = Recheck("team-b", "other", False, None, None, failure="timed out")
    both = judged([ok("team-a", 14), timed_out], AT).sentence
    assert both == "resolved, but the probe of other from team-b still fails (timed out)"
    assert judged([], AT).outcome is VerificationOutcome.UNVERIFIED


def test_flapping_names_when_it_was_due() -> None:
    verdict = flapping(AT)
    assert (verdict.outcome, verdict.sentence) == (
        VerificationOutcome.FLAPPING,
        "fired again before its verification at 22:13 UTC: flapping",
    )


def test_a_failing_probe_in_a_few_words() -> None:
    assert failure_words(ProbeOutcome.UNAVAILABLE, LivePointer.REASON) == "upstream"
    assert failure_words(ProbeOutcome.UNAVAILABLE, LivePointer.PEERS) == "no healthy peers"
    assert failure_words(ProbeOutcome.UNAVAILABLE, None) == "unavailable"
    assert failure_words(ProbeOutcome.TIMEOUT, None) == "timed out"
    assert failure_words(ProbeOutcome.OK, None) == ""


def test_a_verdict_is_kept_as_its_outcome_and_sentence_and_read_back() -> None:
    verdict = Verdict(VerificationOutcome.UNVERIFIED, "resolved, but the probe from team-a still fails (503)")
    assert Verdict.of_detail(verdict.detail) == verdict
    # As kept before the sentence was: the outcome alone.
    assert Verdict.of_detail("verified") == Verdict(VerificationOutcome.VERIFIED, "")
    assert Verdict.of_detail("nonsense\tx") is None
