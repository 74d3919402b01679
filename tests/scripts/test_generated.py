from __future__ import annotations

import pytest

from scripts.generated import write_or_check


def test_check_names_each_stale_file_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    stale = ["a.yaml: not generated"]
    status = write_or_check(["check"], prog="p", about="About.", write=stale.clear, differences=lambda: stale)
    assert status == 1
    assert capsys.readouterr().err == "a.yaml: not generated\n"


def test_write_rewrites_then_checks() -> None:
    stale = ["a.yaml: not generated"]
    status = write_or_check(["write"], prog="p", about="About.", write=stale.clear, differences=lambda: stale)
    assert status == 0
    assert stale == []
