"""The rules one alert's story keeps, checked over every message a run posted (issue 35's invariant table).

A `Thread` is what the on-call engineer reads: a top-level message and its thread's replies, each as plain
text lines (the page's text, or a fake Slack message's texts with mrkdwn marks dropped). Each rule looks at
one thread and names every line that breaks it; `problems` runs them all. A new sentence that contradicts
another fails here, whatever the unit tests of its own renderer say.

| rule | what holds |
|---|---|
| `verdict_vs_next_step` | a verdict placing the fault is never beside "Nothing to do", "self-healed" ... |
| `no_second_verdict` | such a verdict is never beside a "✅ ...: healthy" finding |
| `now_vs_verdict` | a "Now:" line naming such a verdict says "still broken" |
| `headline_vs_details` | the headline's verdict, next step and reading are its details reply's |
| `path_vs_evidence` | both paths failed: the path check cannot judge, blames no relay, no NAT |
| `severity_leads` | a message with a critical alert beside it is headed by a critical one |
| `details_short` | a details reply is at most 25 lines and 2 000 characters |
| `whole_sentences` | a headline's cause and next step never end cut ("…") |
| `one_duration` | a thread says one duration for one resolve |
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

PLACING = ("target_down", "proxy_path", "no_peer_feed", "slow_target")
HEALED = ("Nothing to do", "self-healed", "Watch it resolve")
MAX_LINES = 25
MAX_CHARS = 2000
_MARKS = re.compile(r"(?<![\w])[*_`]|[*_`](?![\w])")
_READ = re.compile(r"Live state read [0-9:]+ UTC")
_DURATION = re.compile(r"\b(All resolved|Resolved) after ((?:\d+ (?:d|h|min|s)\b ?)+)")


@dataclass(frozen=True)
class Thread:
    """A top-level message and its replies, each as its lines; `where` names it in a problem."""

    where: str
    top: tuple[str, ...]
    replies: tuple[tuple[str, ...], ...] = ()

    @property
    def messages(self) -> tuple[tuple[str, ...], ...]:
        return (self.top, *self.replies)


Rule = Callable[[Thread], list[str]]


def plain(text: str) -> str:
    """mrkdwn's bold, italic and code marks dropped, its escapes read: the words as the page shows them."""
    text = _MARKS.sub("", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def lines_of(texts: Iterable[str]) -> tuple[str, ...]:
    return tuple(line.strip() for t in texts for line in plain(t).splitlines() if line.strip())


def _field(lines: Sequence[str], name: str) -> str | None:
    return next((line[len(name) :].strip() for line in lines if line.startswith(name)), None)


def _placing(line: str) -> str | None:
    return next((word for word in PLACING if re.search(rf"\b{word}\b", line)), None)


def _verdict_of(lines: Sequence[str]) -> str | None:
    """The verdict word a message states: its "Verdict:" line, else its "Now:" line."""
    for name in ("Verdict:", "Now:"):
        line = _field(lines, name)
        if line is not None and (word := _placing(line)) is not None:
            return word
    return None


def verdict_vs_next_step(thread: Thread) -> list[str]:
    found = []
    for lines in thread.messages:
        verdict = _verdict_of(lines)
        if verdict is None:
            continue
        found += [
            f"{thread.where}: {verdict} beside {line!r}"
            for line in lines
            if any(word in line for word in HEALED)
        ]
    return found


def no_second_verdict(thread: Thread) -> list[str]:
    found = []
    for lines in thread.messages:
        verdict = _verdict_of(lines)
        if verdict is not None:
            healthy = [line for line in lines if line.startswith("✅") and line.endswith(": healthy")]
            found += [f"{thread.where}: {verdict} beside {line!r}" for line in healthy]
    return found


def now_vs_verdict(thread: Thread) -> list[str]:
    found = []
    for lines in thread.messages:
        now = _field(lines, "Now:")
        if now is not None and _placing(now) and not now.startswith("still broken"):
            found.append(f"{thread.where}: 'Now: {now}'")
    return found


def _title(lines: Sequence[str]) -> str:
    return lines[0] if lines else ""


def _lead_details(thread: Thread) -> tuple[str, ...] | None:
    """The details reply of the alert heading the message (the reply titled as the message is)."""
    title = _title(thread.top)
    return next((r for r in thread.replies if _title(r) == f"Details: {title}"), None)


def headline_vs_details(thread: Thread) -> list[str]:
    details = _lead_details(thread)
    if details is None or _field(details, "Verdict:") is None:
        return []
    found = []
    said, shown = _verdict_of(thread.top), _verdict_of(details)
    if said is not None and said != shown:
        found.append(f"{thread.where}: headline says {said}, its details {shown}")
    read, reply_read = _READ.search(" ".join(thread.top)), _READ.search(" ".join(details))
    if read is not None and reply_read is not None and read.group(0) != reply_read.group(0):
        found.append(f"{thread.where}: headline {read.group(0)!r}, its details {reply_read.group(0)!r}")
    step, reply_step = _field(thread.top, "Next step:"), _field(details, "Next step:")
    # The headline may end its step at a clause ("; " made "."): the details reply says it whole.
    if step is not None and reply_step is not None and not reply_step.startswith(step.rstrip("….")):
        found.append(f"{thread.where}: next step {step!r} vs its details' {reply_step!r}")
    return found


def path_vs_evidence(thread: Thread) -> list[str]:
    found = []
    for lines in thread.messages:
        through, direct = _field(lines, "Through the client:"), _field(lines, "Directly:")
        if through is None or direct is None:
            continue
        if " 0 answered" not in through or " 0 answered" not in direct:
            continue
        if "cannot judge" not in _title(lines):
            found.append(f"{thread.where}: both paths failed, yet {_title(lines)!r}")
        advice = lines[lines.index("Fix") + 1 :] if "Fix" in lines else []
        found += [
            f"{thread.where}: both paths failed, yet {a!r}" for a in advice if re.search(r"NAT|relay", a)
        ]
    return found


def severity_leads(thread: Thread) -> list[str]:
    title = _title(thread.top)
    beside = [line for line in thread.top if line.startswith("↳ also firing: 🔴")]
    if beside and not title.startswith("🔴"):
        return [f"{thread.where}: {title!r} heads {beside[0]!r}"]
    return []


def details_short(thread: Thread) -> list[str]:
    found = []
    for lines in thread.replies:
        if not _title(lines).startswith("Details:"):
            continue
        chars = sum(len(line) + 1 for line in lines)
        if len(lines) > MAX_LINES or chars > MAX_CHARS:
            found.append(f"{thread.where}: details reply of {len(lines)} lines, {chars} characters")
    return found


def whole_sentences(thread: Thread) -> list[str]:
    found = []
    for name in ("Likely cause:", "Next step:"):
        line = _field(thread.top, name)
        if line is not None and line.endswith("…"):
            found.append(f"{thread.where}: {name} {line!r} is cut")
    return found


def one_duration(thread: Thread) -> list[str]:
    durations = {
        m.group(2).strip() for lines in thread.messages for line in lines for m in _DURATION.finditer(line)
    }
    return [f"{thread.where}: resolved after {' and '.join(sorted(durations))}"] if len(durations) > 1 else []


RULES: dict[str, Rule] = {
    "verdict_vs_next_step": verdict_vs_next_step,
    "no_second_verdict": no_second_verdict,
    "now_vs_verdict": now_vs_verdict,
    "headline_vs_details": headline_vs_details,
    "path_vs_evidence": path_vs_evidence,
    "severity_leads": severity_leads,
    "details_short": details_short,
    "whole_sentences": whole_sentences,
    "one_duration": one_duration,
}


def problems(threads: Iterable[Thread]) -> list[str]:
    """Every line of every thread that breaks a rule, named by the rule."""
    return [f"{name}: {p}" for t in threads for name, rule in RULES.items() for p in rule(t)]


def page_threads(where: str, lines: Sequence[str]) -> Thread:
    """A thread from the page's text of one focused message: each message starts with the app's name line
    (`proxybotAPP09:41`), after its avatar's initials."""
    starts = [i for i, line in enumerate(lines) if line.startswith("proxybotAPP")]
    ends = [i - 1 for i in starts[1:]] + [len(lines)]  # the next message's initials end this one
    parts = [tuple(lines[a + 1 : b]) for a, b in zip(starts, ends, strict=True)]
    return Thread(where, parts[0] if parts else (), tuple(parts[1:]))


def slack_threads(
    where: str,
    top: Sequence[Any],
    replies: Callable[[Any], Sequence[Any]],
    texts: Callable[[Any], Iterable[str]],
) -> list[Thread]:
    """Threads from fake Slack messages: `replies(msg)` a message's replies, `texts(msg)` its texts."""
    return [
        Thread(f"{where} {m.ts}", lines_of(texts(m)), tuple(lines_of(texts(r)) for r in replies(m)))
        for m in top
    ]
