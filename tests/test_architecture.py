"""ARCHITECTURE.md names only files and folders that exist: every path in backticks from the repository root,
and every bare file name in a row of its folder table, found in that row's folder."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "ARCHITECTURE.md"
TOP = ("bot/", "handlers/", "config/", "sim/", "tests/", "bench/", "scripts/")
_CODE = re.compile(r"`([^`\s]+)`")
_FILE = re.compile(r"^[\w.-]+\.(py|yaml|md|sh|toml)$")


PLACEHOLDER = "foo"  # "Where to add things" names the files of a subcommand `foo` yet to be written


def rooted(text: str) -> list[str]:
    """Every backticked path from the root (`bot/alerts/`, `config/rules/proxy-alerts.yaml`)."""
    return [w for w in _CODE.findall(text) if w.startswith(TOP) and PLACEHOLDER not in Path(w).name]


def exists(word: str) -> bool:
    return (ROOT / word.rstrip("/")).exists()


def table_rows(text: str) -> list[tuple[str, list[str]]]:
    """(the row's folder, the bare file names its second cell mentions) of the folder table."""
    rows = []
    for line in text.splitlines():
        cells = line.split("|")
        if len(cells) < 4 or not cells[1].strip().startswith("`"):
            continue
        folder = cells[1].strip().strip("`")
        if not folder.startswith(TOP):
            continue
        bare = [w for w in _CODE.findall(cells[2]) if _FILE.match(w)]
        rows.append((folder, bare))
    return rows


def found_under(folder: str, name: str) -> bool:
    base = ROOT / folder.rstrip("/")
    if base.is_file():
        base = base.parent
    return any(base.rglob(name))


def test_every_rooted_path_exists() -> None:
    text = MAP.read_text()
    words = rooted(text)
    assert len(words) > 50  # the map names many files; an empty list would pass anything
    assert [w for w in words if not exists(w)] == []


def test_every_file_a_folder_row_names_is_in_that_folder() -> None:
    rows = table_rows(MAP.read_text())
    assert len(rows) > 10
    missing = [(folder, name) for folder, names in rows for name in names if not found_under(folder, name)]
    assert missing == []


def test_the_checks_catch_a_missing_file() -> None:
    assert not exists("bot/alerts/no_such_module.py")
    assert not found_under("bot/alerts/", "no_such_module.py")
    assert rooted("see `bot/x.py`, `plain.py` and `bot/cli/foo.py`") == ["bot/x.py"]
    assert table_rows("| `bot/alerts/` | `pipeline.py` (one) |") == [("bot/alerts/", ["pipeline.py"])]


def test_where_to_add_things_covers_each_kind() -> None:
    section = MAP.read_text().split("## Where to add things", 1)[1]
    for kind in ("A subcommand", "An alert", "A Slack operation", "A fault", "A config key"):
        assert f"**{kind}**" in section
