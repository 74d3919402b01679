"""`proxybot sim` arguments: --list, and refusals before anything starts."""

from __future__ import annotations

import argparse

import pytest

from sim import cli
from sim.scenarios import SCENARIOS


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_list_names_every_scenario_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--list") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(SCENARIOS)


@pytest.mark.parametrize("argv", [("--scenario", "nope"), ("--speed", "0")])
def test_bad_arguments_exit_2(argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(*argv) == 2
    assert capsys.readouterr().err
