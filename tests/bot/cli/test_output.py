"""What every check command shares: the progress line on stderr only for slow work."""

from __future__ import annotations

import asyncio
import io

from bot.cli.console import Console
from bot.cli.output import with_progress


async def test_progress_line_only_for_slow_work() -> None:
    out, err = io.StringIO(), io.StringIO()
    console = Console({}, out, err)
    # The quick work is a fake that returns on its first turn (time inside a fake, not a wait).
    assert await with_progress(asyncio.sleep(0, "done"), console, "probing…", after=10) == "done"
    assert err.getvalue() == ""
    # The slow work is a fake that takes 50 ms, after a progress delay of 0.
    assert await with_progress(asyncio.sleep(0.05, "slow"), console, "probing…", after=0) == "slow"
    assert err.getvalue() == "probing…\n"
