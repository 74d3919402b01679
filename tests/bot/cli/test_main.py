from __future__ import annotations

import argparse
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from bot.cli.main import build_parser, console_subcommands, main
from bot.errors import ConfigError
from bot.lease import lease_timings
from config.loader import load_config
from tests.fakes.config_data import KUBECONFIG

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "config" / "proxybot.example.yaml"

VALID = """\
slack:
  default_channel: C0ALERTS01
  bot_token: xoxb-SECRET-bot-token
  signing_secret: SECRET-signing
alertmanager: {webhook_token: SECRET-webhook}
clusters:
  - name: prod
    kubeconfig: prod.kubeconfig
    match: {cluster: prod}
    targets:
      - name: payments/ledger
        group_versions: [ledger.example.com/v1]
        probe: {group_version: ledger.example.com/v1, resource: accounts}
      - name: payments/fraud
        group_versions: [fraud.example.com/v1]
        probe: {group_version: fraud.example.com/v1, resource: rules}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "proxybot.yaml"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "prod.kubeconfig").write_text(yaml.safe_dump(KUBECONFIG), encoding="utf-8")
    return path


def run(
    capsys: pytest.CaptureFixture[str], *argv: str, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    status = main(list(argv), env=env or {})
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_the_example_config_is_ok_on_a_bare_environment(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "check-config", "--config", str(EXAMPLE))
    assert (status, out) == (0, f"ok: 2 clusters, 5 targets ({EXAMPLE})\n")
    assert "warning: slack.bot_token: still a placeholder" in err


def test_a_valid_config_prints_one_ok_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, VALID)
    assert run(capsys, "check-config", "--config", str(path)) == (
        0,
        f"ok: 1 cluster, 2 targets ({path})\n",
        "",
    )


def test_proxybot_config_is_the_default_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, VALID)
    status, out, _ = run(capsys, "check-config", env={"PROXYBOT_CONFIG": str(path)})
    assert (status, out) == (0, f"ok: 1 cluster, 2 targets ({path})\n")


def test_every_problem_goes_to_stderr_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = VALID.replace("resource: rules", "resource: ../secrets").replace(
        "slack:\n", "slack:\n  colour: x\n"
    )
    status, out, err = run(capsys, "check-config", "--config", str(write(tmp_path, text)))
    assert (status, out) == (2, "")
    lines = err.splitlines()
    allowed = "bot_token, signing_secret, app_token, api_url, default_channel"
    assert lines[0] == f"slack.colour: unknown key (allowed here: {allowed})"
    assert lines[1].startswith("clusters[0].targets[1].probe.resource: '../secrets' is not a DNS-1035 label")
    assert len(lines) == 2


def test_an_unknown_top_level_key_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "check-config", "--config", str(write(tmp_path, VALID + "digets: {}\n")))
    assert (status, err) == (2, "digets: unknown key; did you mean 'digest'?\n")


def test_json_reports_success_and_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, VALID)
    status, out, _ = run(
        capsys, "check-config", "--json", "--config", str(path), env={"PROXYBOT_STORE_URL": ""}
    )
    assert status == 0
    assert json.loads(out) == {
        "ok": True,
        "config": str(path),
        "clusters": 1,
        "targets": 2,
        "warnings": [],
        "env_overrides": [],
    }
    path.write_text(VALID.replace("name: prod", "name: Prod"), encoding="utf-8")
    status, out, err = run(capsys, "check-config", "--json", "--config", str(path))
    report = json.loads(out)
    assert (status, err, report["ok"]) == (2, "", False)
    assert [problem.split(":")[0] for problem in report["problems"]] == ["clusters[0].name"]


def test_serve_rules_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "check-config", "--serve", "--config", str(EXAMPLE))
    assert (status, out) == (2, "")
    assert "slack.bot_token: still a placeholder" in err


def test_serve_says_each_problem_once(capsys: pytest.CaptureFixture[str]) -> None:
    # The example's control plane kubeconfig is the cluster's and its target's: one missing file, one line,
    # naming both whose it is.
    status, _, err = run(capsys, "check-config", "--serve", "--config", str(EXAMPLE))
    lines = err.splitlines()
    assert status == 2
    assert len(lines) == len(set(lines)), err
    shared = [line for line in lines if "control-plane.yaml" in line]
    assert len(shared) == 1, err
    owners = "cluster prod-eu's control plane and target payments/ledger's control plane"
    assert shared[0].endswith(f"control-plane.yaml (the kubeconfig of {owners}) does not exist"), err
    assert shared[0].startswith("clusters[0].control_plane.kubeconfig: "), err


def test_a_wrong_context_of_a_shared_kubeconfig_is_said_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plane = "control_plane: {kubeconfig: prod.kubeconfig, context: nope, namespace: cp}"
    text = VALID.replace("    match: {cluster: prod}\n", f"    match: {{cluster: prod}}\n    {plane}\n")
    text = text.replace(
        "        probe: {group_version: ledger.example.com/v1, resource: accounts}\n",
        f"        probe: {{group_version: ledger.example.com/v1, resource: accounts}}\n        {plane}\n",
    )
    status, _, err = run(capsys, "check-config", "--serve", "--config", str(write(tmp_path, text)))
    assert status == 2
    assert [line.split(": ")[0] for line in err.splitlines()] == ["clusters[0].control_plane.context"], err
    owners = "cluster prod, cluster prod's control plane and target payments/ledger's control plane"
    assert f"'nope' is not a context in {tmp_path / 'prod.kubeconfig'} (the kubeconfig of {owners})" in err


def test_secrets_never_reach_the_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, VALID)
    env = {"PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN": "SECRET-from-env"}
    outputs = [run(capsys, "check-config", "--json", "--config", str(path), env=env)]
    broken = VALID.replace("bot_token: xoxb-SECRET-bot-token", "bot_token: xapp-SECRET-bot-token")
    path.write_text(broken + "store: {url: 'mysql://u:SECRET-pw@db/x'}\n", encoding="utf-8")
    outputs.append(run(capsys, "check-config", "--config", str(path), env=env))
    outputs.append(run(capsys, "check-config", "--json", "--config", str(path), env=env))
    assert [status for status, _, _ in outputs] == [0, 2, 2]
    assert "SECRET" not in "".join(out + err for _, out, err in outputs)


def test_a_missing_config_file_is_a_config_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "check-config", "--config", str(tmp_path / "none.yaml"))
    assert status == 2
    assert err.startswith(f"{tmp_path / 'none.yaml'}: no such file")


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys)
    assert (status, out) == (2, "")
    assert "check-config" in err


def test_every_command_in_the_table_is_reachable() -> None:
    parser = build_parser()
    [subparsers] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    commands = console_subcommands()
    for command in commands:
        assert subparsers.choices[command.name].get_default("run") is command.run
    names = [c.name for c in commands]
    assert len(names) == len(set(names))
    for name in ("check-config", "demo", "serve", "sim", "status", "peers", "reasons", "probe", "path"):
        assert name in names
    assert {"verify", "netpol"} <= set(names)


def test_python_dash_m_bot_runs_check_config() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bot", "check-config", "--config", "config/proxybot.example.yaml"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout) == (
        0,
        "ok: 2 clusters, 5 targets (config/proxybot.example.yaml)\n",
    )


def test_version_prints_the_installed_packages_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"], env={})
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"proxybot {metadata.version('proxybot')}\n"


def test_python_dash_m_bot_version_exits_0() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bot", "--version"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        f"proxybot {metadata.version('proxybot')}\n",
        "",
    )


def test_check_config_warns_loudly_about_an_unauthenticated_webhook_and_serve_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, VALID.replace("alertmanager: {webhook_token: SECRET-webhook}\n", ""))
    status, out, err = run(capsys, "check-config", "--config", str(path))
    assert (status, out) == (0, f"ok: 1 cluster, 2 targets ({path})\n")
    assert err.startswith("warning: alertmanager.webhook_token: no webhook authentication")
    assert err.endswith("(`serve` refuses this)\n")
    status, out, err = run(capsys, "check-config", "--serve", "--config", str(path))
    assert (status, out) == (2, "")
    assert err.startswith("alertmanager.webhook_token: no webhook authentication")


def test_check_config_warns_about_proxybot_variables_that_mean_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, VALID)
    status, out, _ = run(
        capsys, "check-config", "--json", "--config", str(path), env={"PROXYBOT_SLACK_TOKEN": "x"}
    )
    assert status == 0
    [warning] = json.loads(out)["warnings"]
    assert warning.startswith("PROXYBOT_SLACK_TOKEN: set, but proxybot reads no such variable")
    assert warning.endswith("did you mean PROXYBOT_SLACK_BOT_TOKEN?")


def test_a_lease_shorter_than_fencing_needs_is_refused_as_serve_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The floor `serve` applies on a shared store (`bot.lease.lease_timings`), named by its key."""
    store = "store: {url: 'postgresql://proxybot@db.example.internal/proxybot', lease_seconds: 5}\n"
    path = write(tmp_path, VALID + store)
    status, out, err = run(capsys, "check-config", "--config", str(path))
    assert (status, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith("store.lease_seconds: 5 s is shorter than fencing needs (9.4 s: ")
    with pytest.raises(ConfigError) as refused:
        lease_timings(load_config(path, env={}, purpose="check").settings)
    assert refused.value.problems == [line]
    status, out, _ = run(capsys, "check-config", "--json", "--config", str(path))
    assert status == 2
    assert json.loads(out)["problems"] == [line]


def test_the_lease_floor_follows_the_enrichment_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = "store: {url: 'postgresql://proxybot@db.example.internal/proxybot', lease_seconds: 10}\n"
    path = write(tmp_path, VALID + store)
    assert run(capsys, "check-config", "--config", str(path))[0] == 0
    path.write_text(VALID + store + "enrichment: {timeout_seconds: 20}\n", encoding="utf-8")
    status, _, err = run(capsys, "check-config", "--config", str(path))
    assert status == 2
    assert err.startswith("store.lease_seconds: 10 s is shorter than fencing needs (27.1 s: ")


def test_a_short_lease_on_sqlite_is_not_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One replica's SQLite store takes no lease (`bot/compose.py`), so `serve` does not refuse it either."""
    path = write(tmp_path, VALID + "store: {lease_seconds: 2}\n")
    ok = (0, f"ok: 1 cluster, 2 targets ({path})\n", "")
    assert run(capsys, "check-config", "--config", str(path)) == ok
