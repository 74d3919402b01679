"""scripts/venv.sh, sourced by an operator's own shell (README, config/deploy/README.md): a failure says why
and returns, and the shell that sourced it goes on; scripts/test.sh and scripts/demo.sh still stop on it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def checkout(tmp_path: Path, pip: str) -> Path:
    """A repository root with scripts/venv.sh and a .venv whose pip runs `pip` (a shell command)."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "venv.sh", tmp_path / "scripts")
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "requirements.lock").write_text("")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, body in (("python", "exit 0"), ("pip", pip)):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return tmp_path


def sourced(where: Path, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], cwd=where, capture_output=True, text=True, timeout=30)


def test_a_failed_install_returns_to_the_shell_that_sourced_it(tmp_path: Path) -> None:
    root = checkout(tmp_path, "echo 'ERROR: No matching distribution found for httpx' >&2; exit 1")
    done = sourced(root, 'source scripts/venv.sh; echo "returned $?"')
    assert done.stdout == "returned 1\n"  # the shell went on (an `exit` would have closed it)
    assert "No matching distribution found for httpx" in done.stderr
    assert "installing the Python packages failed" in done.stderr
    assert not (root / ".venv" / ".installed").exists()


def test_a_script_with_errexit_still_stops_on_it(tmp_path: Path) -> None:
    root = checkout(tmp_path, "exit 1")
    done = sourced(root, 'set -e; source scripts/venv.sh; echo "went on"')
    assert done.returncode == 1
    assert "went on" not in done.stdout


def test_an_install_puts_the_venv_on_path(tmp_path: Path) -> None:
    root = checkout(tmp_path, "exit 0")
    done = sourced(root, 'source scripts/venv.sh; echo "$?"; command -v pip')
    assert done.stdout.splitlines() == ["0", str(root / ".venv" / "bin" / "pip")]
    assert (root / ".venv" / ".installed").exists()


def test_sourced_outside_the_repository_root_it_says_so_and_creates_nothing(tmp_path: Path) -> None:
    root = checkout(tmp_path, "exit 0")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = sourced(elsewhere, f'source {root}/scripts/venv.sh; echo "returned $?"')
    assert done.stdout == "returned 1\n"
    assert "source it from the repository root" in done.stderr
    assert list(elsewhere.iterdir()) == []
