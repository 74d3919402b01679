"""What every generator of committed files shares: `write` rewrites them from their source, `check` exits 1
naming each that differs from what is generated now (after `write`, the same check: nothing should)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence


def write_or_check(
    argv: Sequence[str] | None,
    *,
    prog: str,
    about: str,
    write: Callable[[], None],
    differences: Callable[[], Iterable[str]],
) -> int:
    """Run `python -m PROG write|check`; 0 when every generated file is current, 1 naming each that is not."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}", description=about.splitlines()[0])
    parser.add_argument("action", choices=("write", "check"))
    args = parser.parse_args(argv)
    if args.action == "write":
        write()
    problems = list(differences())
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0
