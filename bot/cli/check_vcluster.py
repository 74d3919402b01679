"""`proxybot check-vcluster FILE [--json]`: a client's vcluster.yaml judged as vCluster's startup validation
judges its resource proxy section. Local: reads one file, no cluster, no config.

Exit 0 when vCluster would accept it (warnings may print), 1 when it would refuse it or the file is not
valid YAML, 2 when the file cannot be read (no such file, a directory, no permission, far too large).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bot.checks.vcluster_yaml import judge_vcluster_yaml
from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import EXIT_USAGE, finish
from bot.domain.vcluster_yaml_result import VclusterYamlResult
from bot.render.checks_vcluster import vcluster_text
from bot.render.terminal import Style, colour_enabled

# A vcluster.yaml is a few kilobytes; anything this large is the wrong file.
MAX_BYTES = 4 * 1024 * 1024


def vcluster_report(file: str, result: VclusterYamlResult) -> dict[str, Any]:
    """The result as one JSON-ready object."""
    return {
        "check": "check-vcluster",
        "file": file,
        "passed": result.passed,
        "verdict": result.verdict,
        "proxy": result.proxy.value,
        "group_versions": [
            {
                "group_version": route.group_version,
                "target": route.target,
                "project": route.project,
                "access": route.access,
                "keys": list(route.keys),
            }
            for route in result.routes
        ],
        "problems": [
            {"severity": p.severity.value, "key": p.key, "message": p.message, "next": p.next_step}
            for p in result.problems
        ],
    }


def read_limited(path: Path) -> bytes:
    """The file's bytes; `OSError` with a one-line reason when it cannot be read."""
    with path.open("rb") as stream:
        data = stream.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise OSError(f"larger than {MAX_BYTES // (1024 * 1024)} MiB: not a vcluster.yaml")
    return data


def _unreadable(err: OSError) -> str:
    if isinstance(err, FileNotFoundError):
        return "no such file"
    if isinstance(err, IsADirectoryError):
        return "a directory, not a file"
    if isinstance(err, PermissionError):
        return "permission denied"
    return err.strerror or str(err)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", type=Path, help="the client tenant cluster's vcluster.yaml")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def check_vcluster(args: argparse.Namespace, console: Console) -> int:
    """Judge FILE's experimental.proxy.customResources as vCluster would at startup."""
    file = str(args.file)
    try:
        data = read_limited(args.file)
    except OSError as err:
        why = _unreadable(err)
        if args.json:
            console.say(json.dumps({"check": "check-vcluster", "file": file, "passed": False, "error": why}))
        else:
            console.warn(f"{file}: {why}")
        return EXIT_USAGE
    result = judge_vcluster_yaml(data)
    text = vcluster_text(file, result, Style(colour_enabled(console.out, console.env)))
    return finish(args, console, vcluster_report(file, result), text)


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand(
        name="check-vcluster",
        add_arguments=_arguments,
        run=check_vcluster,
    ),
)
