"""`proxybot serve` that cannot start says why in one line on stderr and exits 2, never with a traceback."""

from __future__ import annotations

import gc
import socket
import subprocess
import sys
from pathlib import Path

import yaml

from bot.cli.serve import GC_THRESHOLDS, settle_collector
from tests.fakes.config_data import KUBECONFIG

ROOT = Path(__file__).parents[3]
CONFIG = """\
slack: {default_channel: C0ALERTS01, bot_token: xoxb-1-real, signing_secret: real-signing}
alertmanager: {webhook_token: real-webhook-token}
store: {url: "STORE"}
digest: {enabled: false}
clusters:
  - name: prod
    kubeconfig: prod.kubeconfig
    match: {cluster: prod}
    targets:
      - name: payments/ledger
        group_versions: [ledger.example.com/v1]
        probe: {group_version: ledger.example.com/v1, resource: accounts}
"""


def serve(tmp_path: Path, store: str, kubeconfig: str, *argv: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "prod.kubeconfig").write_text(kubeconfig, encoding="utf-8")
    config = tmp_path / "proxybot.yaml"
    config.write_text(CONFIG.replace("STORE", store), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "bot", "serve", "--config", str(config), *argv],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_line_and_exit_2(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr
    assert (result.returncode, result.stdout) == (2, "")
    [line] = result.stderr.splitlines()
    return line


def test_a_file_that_is_not_a_kubeconfig_names_the_file_and_the_cluster(tmp_path: Path) -> None:
    result = serve(tmp_path, f"sqlite:///{tmp_path / 'bot.db'}", "contexts: []\n")
    assert one_line_and_exit_2(result) == (
        f"clusters[0].kubeconfig: {tmp_path / 'prod.kubeconfig'} (the kubeconfig of cluster prod) is not a "
        "kubeconfig: it lists no clusters"
    )


def test_a_store_directory_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    store = tmp_path / "missing" / "bot.db"
    result = serve(tmp_path, f"sqlite:///{store}", yaml.safe_dump(KUBECONFIG))
    line = one_line_and_exit_2(result)
    assert line.startswith(f"proxybot serve cannot start: cannot open the store at {store}: ")


def test_a_store_that_does_not_answer_is_one_line_without_its_password(tmp_path: Path) -> None:
    result = serve(tmp_path, "postgresql://u:hunter2@127.0.0.1:9/x", yaml.safe_dump(KUBECONFIG))
    line = one_line_and_exit_2(result)
    assert line.startswith("proxybot serve cannot start: cannot connect to postgresql at 127.0.0.1:9/x: ")
    assert "hunter2" not in result.stderr


def test_a_port_already_taken_exits_2_after_saying_so(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = serve(
            tmp_path, f"sqlite:///{tmp_path / 'bot.db'}", yaml.safe_dump(KUBECONFIG), "--port", str(port)
        )
    assert "Traceback" not in result.stderr
    assert result.returncode == 2
    assert (
        f"error while attempting to bind on address ('127.0.0.1', {port}): address already in use"
        in result.stderr
    )


def test_serving_freezes_what_startup_built_and_collects_less_often() -> None:
    thresholds = gc.get_threshold()
    try:
        settle_collector()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 0, "nothing built at startup was frozen"
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
