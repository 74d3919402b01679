"""The CLI imports what a command uses, when it runs: `import bot.cli.main`, `--version`, `--help` and
`check-config` in a fresh interpreter load none of the heavy libraries (the Kubernetes and HTTP clients,
Slack, the HTTP server, the store's PostgreSQL driver, the charts)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).parents[3]
EXAMPLE = "config/proxybot.example.yaml"
HEAVY = (
    "matplotlib",
    "numpy",
    "kubernetes",
    "aiohttp",
    "psycopg",
    "psycopg_pool",
    "starlette",
    "uvicorn",
    "slack_sdk",
    "slack_bolt",
    "httpx",
    "apscheduler.schedulers",
)
# Run in a fresh interpreter: what `code` leaves imported, as JSON on the last line of stdout.
PROBE = """
import json, sys
try:
    {code}
except SystemExit:
    pass
finally:
    print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {roots} or m in {names})))
"""


def heavy_after(code: str) -> list[str]:
    roots = {name for name in HEAVY if "." not in name}
    script = PROBE.format(code=code, roots=sorted(roots), names=sorted(set(HEAVY) - roots))
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert heavy_after("import bot.cli.main") == []


def test_the_probe_sees_a_heavy_library_when_one_is_imported() -> None:
    assert "starlette" in heavy_after("import bot.cli.main, starlette.routing")


def test_version_help_and_check_config_load_no_heavy_library() -> None:
    run = "from bot.cli.main import main; main({argv!r})"
    assert heavy_after(run.format(argv=["--version"])) == []
    assert heavy_after(run.format(argv=["--help"])) == []
    assert heavy_after(run.format(argv=["check-config", "--config", EXAMPLE])) == []


def proxybot(*argv: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "proxybot"), *argv]
    return subprocess.run(
        command,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_proxybot_version_in_a_subprocess() -> None:
    result = proxybot("--version")
    assert (result.returncode, result.stdout) == (0, f"proxybot {metadata.version('proxybot')}\n")


def test_proxybot_check_config_in_a_subprocess() -> None:
    result = proxybot("check-config", "--config", EXAMPLE, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["ok"], report["clusters"], report["targets"]) == (True, 2, 5)
    bad = proxybot("check-config", "--config", "config/no-such.yaml")
    assert bad.returncode == 2
    assert bad.stderr.startswith("config/no-such.yaml: no such file")
