"""The verify check's answer as a Slack message (the CLI shows the same message in the terminal)."""

from __future__ import annotations

from bot.domain.verify_result import Outcome, VerifyLine, VerifyResult
from bot.render.blocks import Block, Message, context, esc, header, message, section

_MARK = {Outcome.PASS: "✅", Outcome.FAIL: "🔴", Outcome.NOT_CHECKED: "🟠"}
_TITLE = {
    "scrape": "Scraping works",
    "rules": "Rules load",
    "probe-cronjob": "The probe runs",
    "probe-series": "kube_cronjob_created in Prometheus",
    "syncer": "/metrics/syncer readable",
    "apiservices": "The proxy's APIServices",
    "versions": "vCluster versions",
}


def _line(line: VerifyLine) -> Block:
    where = f" ({esc(line.cluster)})" if line.cluster else ""
    title = _TITLE.get(line.key, line.key)
    text = f"{_MARK[line.outcome]} *{title}*{where}: {line.outcome.value} — {esc(line.summary)}"
    text += "".join(f"\n   {esc(e)}" for e in line.evidence)
    if line.fix and line.outcome is not Outcome.PASS:
        text += f"\n   *Fix:* {esc(line.fix)}"
    return section(text)


def verify_message(result: VerifyResult) -> Message:
    """One line per verified piece, failures and skipped lines with their fix."""
    outcome = result.outcome
    counts = {o: sum(1 for line in result.lines if line.outcome is o) for o in Outcome}
    summary = ", ".join(f"{n} {o.value}" for o, n in counts.items() if n)
    title = {
        Outcome.PASS: "monitoring works",
        Outcome.FAIL: "monitoring is not working",
        Outcome.NOT_CHECKED: "not fully verified",
    }[outcome]
    body: list[Block] = [header(f"{_MARK[outcome]} Verify: {title}"), *(_line(line) for line in result.lines)]
    tail = [context([f"{summary}. Guide: _Verify the monitoring works_; a skipped line is not a pass."])]
    return message(f"Verify: {title} ({summary})", body, tail)
