"""The story rules catch what they name: each on a thread that breaks it, and none on one that keeps it."""

from __future__ import annotations

import pytest

from tests.harness.story import RULES, Thread, page_threads, plain, problems

HEAD = "🔴 FIRING: ResourceProxyNoHealthyPeers · platform/crd-store"
NOW = "Now: still broken · 🔴 target_down · healthy 0, quarantined 1"
STEP = "Next step: Fix the target tenant cluster's control plane."
DETAILS = (f"Details: {HEAD}", "Verdict: 🔴 target_down: the target is down", STEP)
GOOD = Thread("good", (HEAD, NOW, "Likely cause: The target is down.", STEP), (DETAILS,))

BROKEN: dict[str, Thread] = {
    "verdict_vs_next_step": Thread("t", (HEAD, NOW, "Next step: Nothing to do.")),
    "now_vs_verdict": Thread("t", (HEAD, "Now: recovering · 🔴 target_down")),
    "no_second_verdict": Thread("t", (HEAD,), ((*DETAILS, "✅ platform/crd-store: healthy"),)),
    "headline_vs_details": Thread(
        "t", (HEAD, NOW, "Next step: Check the dial failures by reason."), (DETAILS,)
    ),
    "path_vs_evidence": Thread(
        "t",
        (HEAD,),
        (
            (
                "🟠 Path platform/crd-store: likely relayed",
                "Through the client: min n/a — 0 answered, 5 failed (HTTP 503)",
                "Directly: min n/a — 0 answered, 5 failed (HTTP 503)",
                "Fix",
                "check NAT topology (symmetric NAT defeats hole punching)",
            ),
        ),
    ),
    "severity_leads": Thread(
        "t",
        ("🟠 FIRING: ResourceProxyTargetUnavailable · x", "↳ also firing: 🔴 ResourceProxyNoHealthyPeers"),
    ),
    "details_short": Thread("t", (HEAD,), ((f"Details: {HEAD}", *(f"line {i}" for i in range(30))),)),
    "whole_sentences": Thread("t", (HEAD, "Likely cause: The target's endpoints failed 3 dials and were…")),
    "one_duration": Thread("t", (HEAD, "Resolved after 29 s"), (("All resolved after 32 s",),)),
}


def test_every_rule_has_its_broken_thread() -> None:
    assert set(BROKEN) == set(RULES)


@pytest.mark.parametrize("name", sorted(RULES))
def test_each_rule_names_what_breaks_it(name: str) -> None:
    assert RULES[name](BROKEN[name]), name
    assert RULES[name](GOOD) == [], name


def test_a_headline_and_its_details_read_at_two_moments_are_two_stories() -> None:
    top = (*GOOD.top, "Live state read 09:40:18 UTC (just now) from replica team-a-0")
    details = (*DETAILS, "Live state read 09:40:00 UTC (just now) from replica team-a-0")
    assert RULES["headline_vs_details"](Thread("t", top, (details,)))
    assert RULES["headline_vs_details"](Thread("t", top, ((*DETAILS, top[-1]),))) == []


def test_a_thread_that_keeps_every_rule_has_no_problem() -> None:
    assert problems([GOOD]) == []


def test_the_page_text_splits_into_its_messages() -> None:
    lines = ["pb", "proxybotAPP09:41", HEAD, NOW, "(edited)1 reply", "pb", "proxybotAPP09:41", *DETAILS]
    thread = page_threads("page", lines)
    assert thread.top == (HEAD, NOW, "(edited)1 reply")
    assert thread.replies == (DETAILS,)


def test_mrkdwn_marks_are_dropped_names_kept() -> None:
    assert (
        plain("*Next step:* run `proxybot status a_b` &lt;now&gt;")
        == "Next step: run proxybot status a_b <now>"
    )
