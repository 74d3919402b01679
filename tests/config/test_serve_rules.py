"""What `serve` refuses beyond valid settings: the placeholders our docs show, a token as the signing secret,
a webhook nobody authenticates, the clients' credential and CA files missing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trustme
import yaml

from bot.errors import ConfigError
from config.environment import SECRET_OVERRIDES
from config.loader import load_config
from config.serve_rules import Purpose
from tests.fakes.config_data import KUBECONFIG

ROOT = Path(__file__).parents[2]
DEPLOY_GUIDE = ROOT / "config" / "deploy" / "README.md"
SECRET_TEMPLATE = ROOT / "config" / "deploy" / "secret.template.yaml"

CONFIG = """\
slack: {default_channel: C0ALERTS01, bot_token: xoxb-1-real, signing_secret: real-signing}
alertmanager: ALERTMANAGER
clusters:
  - name: prod
    kubeconfig: prod.kubeconfig
    match: {cluster: prod}
    targets:
      - name: payments/ledger
        group_versions: [ledger.example.com/v1]
        probe: {group_version: ledger.example.com/v1, resource: accounts}
"""
AUTHENTICATED = "{webhook_token: real-webhook-token}"


def write(tmp_path: Path, alertmanager: str = AUTHENTICATED) -> Path:
    (tmp_path / "prod.kubeconfig").write_text(yaml.safe_dump(KUBECONFIG), encoding="utf-8")
    path = tmp_path / "proxybot.yaml"
    path.write_text(CONFIG.replace("ALERTMANAGER", alertmanager), encoding="utf-8")
    return path


def refused(path: Path, env: dict[str, str] | None = None, purpose: Purpose = "serve") -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(path, env=env or {}, purpose=purpose)
    return caught.value.problems


def documented_values() -> list[tuple[str, str]]:
    """Every value the deploy guide and the Secret template show for a PROXYBOT_* secret."""
    guide = re.findall(r"--from-literal=(PROXYBOT_[A-Z_]+)='([^']*)'", DEPLOY_GUIDE.read_text())
    template = yaml.safe_load(SECRET_TEMPLATE.read_text())["stringData"]
    return sorted({*guide, *((name, value) for name, value in template.items() if value)})


def test_the_docs_show_a_placeholder_for_every_secret_they_name() -> None:
    shown = dict(documented_values())
    assert {"PROXYBOT_SLACK_BOT_TOKEN", "PROXYBOT_SLACK_SIGNING_SECRET", "PROXYBOT_STORE_URL"} <= set(shown)
    assert shown["PROXYBOT_SLACK_SIGNING_SECRET"] in {"your-signing-secret", "<signing-secret>"}


@pytest.mark.parametrize(("variable", "value"), documented_values())
def test_every_placeholder_the_docs_show_is_refused_by_serve(
    tmp_path: Path, variable: str, value: str
) -> None:
    env = {variable: value}
    if variable == "PROXYBOT_SLACK_APP_TOKEN":
        env["PROXYBOT_SLACK_SIGNING_SECRET"] = "real-signing"
    loc = ".".join(SECRET_OVERRIDES[variable])
    assert refused(write(tmp_path), env) == [
        f"{loc}: still a placeholder; put the real secret here or in {variable}"
    ]


@pytest.mark.parametrize("value", ["xoxb-your-token", "xapp-your-token", "your-signing-secret", "YOUR_TOKEN"])
def test_the_your_token_kind_of_placeholder_is_refused(tmp_path: Path, value: str) -> None:
    variable = "PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN"
    assert refused(write(tmp_path), {variable: value}) == [
        f"alertmanager.webhook_token: still a placeholder; put the real secret here or in {variable}"
    ]


@pytest.mark.parametrize("prefix", ["xoxb-", "xoxp-", "xapp-"])
def test_a_slack_token_pasted_as_the_signing_secret_is_refused_naming_only_its_prefix(
    tmp_path: Path, prefix: str
) -> None:
    token = f"{prefix}1234-5678-SECRETPART"
    for purpose in ("check", "serve"):
        assert refused(write(tmp_path), {"PROXYBOT_SLACK_SIGNING_SECRET": token}, purpose) == [
            f"slack.signing_secret: this is a Slack token ({prefix}...), not the signing secret: copy the "
            "app's Basic Information -> App Credentials -> Signing Secret"
        ]


NO_WEBHOOK_AUTH = (
    "alertmanager.webhook_token: no webhook authentication (neither webhook_token nor webhook_username/"
    "webhook_password): anyone who can reach POST /alertmanager can post alerts into Slack; set a token here "
    "or in PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN and the same in Alertmanager's receiver "
    "(config/alertmanager/receiver.yaml), or set alertmanager.allow_unauthenticated: true if that is meant"
)


def test_no_webhook_authentication_warns_for_check_and_is_refused_by_serve(tmp_path: Path) -> None:
    path = write(tmp_path, "{url: 'http://alertmanager:9093'}")
    assert load_config(path, env={}, purpose="check").warnings == (
        f"{NO_WEBHOOK_AUTH} (`serve` refuses this)",
    )
    assert refused(path) == [NO_WEBHOOK_AUTH]


def test_an_unauthenticated_webhook_is_served_when_explicitly_allowed(tmp_path: Path) -> None:
    path = write(tmp_path, "{allow_unauthenticated: true}")
    assert load_config(path, env={}, purpose="serve").warnings == ()


@pytest.mark.parametrize(
    ("alertmanager", "env"),
    [
        ("{}", {"PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN": "from-the-secret"}),
        ("{webhook_username: am}", {"PROXYBOT_ALERTMANAGER_WEBHOOK_PASSWORD": "from-the-secret"}),
    ],
)
def test_a_token_or_basic_auth_from_the_environment_is_authentication(
    tmp_path: Path, alertmanager: str, env: dict[str, str]
) -> None:
    assert load_config(write(tmp_path, alertmanager), env=env, purpose="serve").warnings == ()


def test_the_clients_credential_files_must_be_there_for_serve(tmp_path: Path) -> None:
    alertmanager = (
        "{webhook_token: real-webhook-token, url: 'https://am:9093', ca_file: am-ca.pem, "
        "basic_auth: {username: bot, password_file: am-password}}"
    )
    path = write(tmp_path, alertmanager)
    path.write_text(
        path.read_text() + "prometheus: {url: 'https://prom:9090', bearer_token_file: prom-token}\n"
    )
    (tmp_path / "am-password").write_text("\n")
    missing = [
        f"prometheus.bearer_token_file: {tmp_path / 'prom-token'} does not exist",
        f"alertmanager.ca_file: {tmp_path / 'am-ca.pem'} does not exist",
        f"alertmanager.basic_auth.password_file: {tmp_path / 'am-password'} is empty",
    ]
    # Mounted only at deploy time, perhaps: `check` warns, `serve` refuses.
    assert load_config(path, env={}, purpose="check").warnings == tuple(
        f"{m} (`serve` refuses this)" for m in missing
    )
    assert refused(path) == missing
    (tmp_path / "prom-token").write_text("token")
    (tmp_path / "am-password").write_text("password")
    (tmp_path / "am-ca.pem").write_text("-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n")
    ca = tmp_path / "am-ca.pem"
    not_a_ca = f"alertmanager.ca_file: {ca} is not a PEM CA bundle (no certificate loads from it)"
    assert refused(path, purpose="check") == [not_a_ca]  # wrong wherever the config is read
    (tmp_path / "am-ca.pem").write_text(trustme.CA().cert_pem.bytes().decode())
    assert load_config(path, env={}, purpose="serve").warnings == ()


GRANTS = """\
access:
  channels:
    - {channel: "#ops", clusters: ["*"]}
    - {channel: C0PLATONCALL, clusters: [prod]}
"""


def test_a_grant_to_a_channel_name_is_warned_about_by_check_and_serve(tmp_path: Path) -> None:
    """Slack lets a channel be renamed and its name taken by a new channel: a grant to `#ops` would then
    let whoever made the new #ops query every cluster. The warning recommends the ID."""
    path = write(tmp_path)
    text = path.read_text().replace("C0ALERTS01", '"#alerts"') + GRANTS
    path.write_text(text)
    for purpose in ("check", "serve"):
        warnings = load_config(path, env={}, purpose=purpose).warnings
        assert [w.split(": ")[0] for w in warnings] == ["access.channels[0].channel", "slack.default_channel"]
        assert all("by name" in w and "ID (C0123ABCDE" in w for w in warnings)
        assert "'#ops' grants queries by name" in warnings[0]
        assert "access.alert_channels_may_query" in warnings[1]
    path.write_text(text + "  alert_channels_may_query: false\n")
    [warning] = load_config(path, env={}, purpose="check").warnings
    assert warning.startswith("access.channels[0].channel: '#ops'")
    path.write_text(text.replace('"#ops"', "C0OPS00001").replace('"#alerts"', "C0ALERTS01"))
    assert load_config(path, env={}, purpose="serve").warnings == ()
    assert load_config(path, env={}, purpose="demo").warnings == ()


def test_the_shipped_configs_grant_by_channel_id() -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-1-x", "SLACK_SIGNING_SECRET": "y", "ALERTMANAGER_WEBHOOK_TOKEN": "z"}
    warnings = load_config(ROOT / "config" / "proxybot.example.yaml", env=env).warnings
    assert not [w for w in warnings if "by name" in w], warnings
