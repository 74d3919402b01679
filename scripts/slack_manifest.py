"""The Slack app manifests' `/proxy` usage hint, generated from the table of subcommands (bot/subcommands.py),
so a subcommand is added in the table and not again in config/slack/.

The hint lists every `/proxy` subcommand with its positionals (an optional one in brackets, the first form
of one that has several): those `/proxy help` lists, in the table's order, then `help`. The rest of each
manifest is written by hand (the two differ only in transport).

    python -m scripts.slack_manifest write    # rewrite the hint in both manifests
    python -m scripts.slack_manifest check    # exit 1, naming each manifest whose hint is not the table's

tests/config/test_slack_manifest.py runs the check.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from bot.subcommands import SLASH
from scripts.generated import write_or_check

ROOT = Path(__file__).resolve().parents[1]
SLACK = ROOT / "config" / "slack"
MANIFESTS = (SLACK / "manifest.yaml", SLACK / "manifest.socket-mode.yaml")
_HINT = re.compile(r"^(?P<indent>[ ]*)usage_hint: .*$", re.MULTILINE)


def usage_hint() -> str:
    """`status [TARGET] | peers TARGET | … | help [SUBCOMMAND]`."""
    names = sorted(SLASH, key=lambda name: not SLASH[name].usage)  # help, listing the others, last
    return " | ".join(f"{name} {SLASH[name].grammar.hint()}".rstrip() for name in names)


def manifest_text(path: Path) -> str:
    """The manifest at `path` with its one `usage_hint` line the table's."""
    text = path.read_text()
    if len(_HINT.findall(text)) != 1:
        raise ValueError(f"{path}: expected one usage_hint line")
    # A JSON string is a YAML double-quoted scalar.
    return _HINT.sub(lambda m: f"{m['indent']}usage_hint: {json.dumps(usage_hint())}", text)


def differences(paths: Sequence[Path] = MANIFESTS) -> Iterator[str]:
    """Each manifest whose usage hint is not what the table generates now."""
    for path in paths:
        if path.read_text() != manifest_text(path):
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            yield f"{shown}: usage_hint is not the table's (python -m scripts.slack_manifest write)"


def write(paths: Sequence[Path] = MANIFESTS) -> None:
    for path in paths:
        path.write_text(manifest_text(path))


def main(argv: Sequence[str] | None = None) -> int:
    return write_or_check(
        argv, prog="scripts.slack_manifest", about=__doc__ or "", write=write, differences=differences
    )


if __name__ == "__main__":
    sys.exit(main())
