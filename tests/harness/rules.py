"""Shorten the shipped alert rules mechanically, so real Prometheus can evaluate them in seconds in tests.

The simulator runs `speed` simulated seconds per wall second and shows its timestamps compressed the same
way, so dividing every duration of the rules by that speed keeps each rule's meaning: a `for: 2m` hold
becomes 6 s at speed 20, exactly as long as two simulated minutes. Only durations change: `for:` holds,
range windows, and the probe's age threshold (seconds compared with `time() - <timestamp>`).
"""

from __future__ import annotations

import re

from tests.harness.process import HarnessError

FOR_CLAUSE = re.compile(r"^(?P<head>\s*for:\s*)(?P<duration>\S+)\s*$", re.MULTILINE)
RANGE_SELECTOR = re.compile(r"\[(?P<duration>[^\]:]+)\]")
# The only bare numbers in the rules that are durations: ages compared against `time() - <timestamp>`.
AGE_THRESHOLD = re.compile(r"(?P<head>time\(\) - [^\n]*?\} > )(?P<seconds>\d+(?:\.\d+)?)")
DURATION = re.compile(r"^(?P<amount>\d+)(?P<unit>ms|s|m|h|d|w)$")
UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def duration_seconds(text: str) -> float:
    """Seconds in a single-unit Prometheus duration (`90s`, `5m`, `1h`); anything else is refused."""
    match = DURATION.match(text)
    if match is None:
        raise HarnessError(f"not a single-unit Prometheus duration: {text!r}")
    return int(match["amount"]) * UNIT_SECONDS[match["unit"]]


def format_duration(seconds: float) -> str:
    """A Prometheus duration in whole seconds when exact, else in whole milliseconds (at least 1 ms)."""
    if seconds == int(seconds) and seconds >= 1:
        return f"{int(seconds)}s"
    return f"{max(1, round(seconds * 1000))}ms"


def shorten_rules(text: str, factor: float) -> str:
    """The rule file `text` with every `for`, range window and age threshold divided by `factor`."""
    if factor <= 0:
        raise HarnessError("the shortening factor must be positive")

    def hold(match: re.Match[str]) -> str:
        return match["head"] + format_duration(duration_seconds(match["duration"]) / factor)

    def window(match: re.Match[str]) -> str:
        return f"[{format_duration(duration_seconds(match['duration']) / factor)}]"

    def age(match: re.Match[str]) -> str:
        return match["head"] + f"{float(match['seconds']) / factor:g}"

    text = FOR_CLAUSE.sub(hold, text)
    text = RANGE_SELECTOR.sub(window, text)
    return AGE_THRESHOLD.sub(age, text)
