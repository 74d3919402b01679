"""`/proxy help`: usage with examples, listing only the subcommands the person asking may run here."""

from __future__ import annotations

from collections.abc import Collection

from bot.render.blocks import Block, Message, code, context, esc, header, message, section
from bot.subcommands import SLASH

# What help lists, in the table's order: every subcommand with a usage line (not help itself).
HELP: tuple[str, ...] = tuple(name for name, slash in SLASH.items() if slash.usage)


def _entry(name: str) -> str:
    item = SLASH[name]
    return f"{code('/proxy ' + item.usage)}\n{esc(item.does)} — e.g. {code('/proxy ' + item.example)}"


def help_message(allowed: Collection[str], *, channel: str, focus: str | None = None) -> Message:
    """Usage of the subcommands in `allowed` (in the usual order); `focus` shows just that one.

    `channel` names where they asked, as mrkdwn (made by the caller, `Asker.place`)."""
    names = [name for name in HELP if name in allowed]
    if focus is not None and focus in names:
        names = [focus]
    if not names:
        text = (
            f"proxybot answers nothing in {channel} for you: this place is not granted any cluster. "
            "An operator can add it under `access` in proxybot's configuration."
        )
        return message("proxybot: nothing you may run here", [section(text)])
    body: list[Block] = [header("/proxy: what you may run here")]
    body += [section(_entry(name)) for name in names]
    notes = [
        "Answers are visible only to you; add `public` to show one to the channel.",
        "TARGET is a configured target, `&lt;project&gt;/&lt;name&gt;`.",
    ]
    return message("/proxy: " + ", ".join(names), body, [context(notes)])
