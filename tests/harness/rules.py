"""Shorten the shipped alert rules mechanically, so real Prometheus can evaluate them in seconds in tests.

Only durations change: `for:` holds, range windows, and the probe's age threshold in seconds. Every one of
them must be in the mapping, so a rule added later with a new duration fails loudly instead of keeping an
hour-long window in a test that waits a minute.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from tests.harness.process import HarnessError

FOR_CLAUSE = re.compile(r"^(?P<head>\s*for:\s*)(?P<duration>\S+)\s*$", re.MULTILINE)
RANGE_SELECTOR = re.compile(r"\[(?P<duration>\d+[smhdwy])\]")
# The only bare numbers in the rules that are durations: ages compared against `time() - <timestamp>`.
AGE_THRESHOLD = re.compile(r"(?P<head>time\(\) - [^\n]*?\} > )(?P<seconds>\d+)")


@dataclass(frozen=True)
class Shortening:
    """How each duration of the rule file maps to its test-time counterpart."""

    holds: Mapping[str, str] = field(default_factory=dict)
    windows: Mapping[str, str] = field(default_factory=dict)
    ages: Mapping[str, str] = field(default_factory=dict)


# Windows stay many scrape intervals long (1 s scrapes) so rate() and increase() still see several samples.
E2E = Shortening(
    holds={"2m": "10s", "5m": "15s", "30m": "15s"},
    windows={"5m": "30s", "10m": "1m", "30m": "2m", "1h": "1m"},
    ages={"900": "60"},
)


def _lookup(mapping: Mapping[str, str], duration: str, kind: str) -> str:
    try:
        return mapping[duration]
    except KeyError:
        raise HarnessError(f"no shortened value for the {kind} {duration!r}") from None


def shorten_rules(text: str, shortening: Shortening = E2E) -> str:
    """The rule file `text` with every `for`, range window and age threshold replaced per `shortening`."""
    text = FOR_CLAUSE.sub(
        lambda m: m["head"] + _lookup(shortening.holds, m["duration"], "for duration"), text
    )
    text = RANGE_SELECTOR.sub(
        lambda m: f"[{_lookup(shortening.windows, m['duration'], 'range window')}]", text
    )
    return AGE_THRESHOLD.sub(
        lambda m: m["head"] + _lookup(shortening.ages, m["seconds"], "age threshold"), text
    )
