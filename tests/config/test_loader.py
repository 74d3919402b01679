from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.errors import ConfigError
from config.environment import SECRET_OVERRIDES
from config.fields import format_loc
from config.loader import load_config, parse_config
from config.serve_rules import Purpose, secret_fields
from config.settings import Settings

EXAMPLE = Path(__file__).parents[2] / "config" / "proxybot.example.yaml"

REAL_SECRETS = {
    "SLACK_BOT_TOKEN": "xoxb-1111-real-bot-token",
    "SLACK_SIGNING_SECRET": "8f0c1d2e-real-signing-secret",
    "ALERTMANAGER_WEBHOOK_TOKEN": "am-real-webhook-token",
}

MINIMAL = """\
slack:
  default_channel: C0ALERTS01
  bot_token: {bot_token}
  signing_secret: {signing_secret}
alertmanager: {alertmanager}
clusters:
  - name: prod
    kubeconfig: {kubeconfig}
    match: {{cluster: prod}}
    targets:
      - name: payments/ledger
        group_versions: [ledger.example.com/v1]
        probe: {{group_version: ledger.example.com/v1, resource: accounts}}
"""


def minimal(**values: str) -> str:
    fields = {
        "bot_token": "xoxb-1-real",
        "signing_secret": "real-signing",
        "kubeconfig": "prod.kubeconfig",
        "alertmanager": "{webhook_token: real-webhook-token}",
    }
    fields.update(values)
    return MINIMAL.format(**fields)


def write(tmp_path: Path, text: str, name: str = "proxybot.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(path: Path, env: dict[str, str] | None = None, purpose: Purpose = "check") -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(path, env=env or {}, purpose=purpose)
    return caught.value.problems


def kubeconfig(path: Path, *contexts: str) -> Path:
    """A kubeconfig the Kubernetes client loads: one cluster and user, these contexts (the first current)."""
    entries = "".join(f"  - name: {name}\n    context: {{cluster: c, user: u}}\n" for name in contexts)
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters:\n  - name: c\n    cluster: {server: 'https://127.0.0.1:6443'}\n"
        "users:\n  - name: u\n    user: {token: t}\n"
        f"contexts:\n{entries}current-context: {contexts[0]}\n",
        encoding="utf-8",
    )
    return path


def test_the_example_loads_with_its_variables_set() -> None:
    loaded = load_config(EXAMPLE, env=REAL_SECRETS, purpose="check")
    settings = loaded.settings
    assert [cluster.name for cluster in settings.clusters] == ["prod-eu", "staging"]
    assert settings.target_count() == 5
    assert settings.slack.bot_token == SecretStr("xoxb-1111-real-bot-token")
    assert settings.slack.app_token is None  # ${SLACK_APP_TOKEN:-} means HTTP mode
    assert settings.clusters[0].kubeconfig == EXAMPLE.parent / "kubeconfigs/prod-eu.yaml"
    assert settings.clusters[0].targets[0].direct is not None
    assert settings.access.silencers
    assert all("placeholder" not in warning for warning in loaded.warnings)


def test_the_example_passes_check_on_a_bare_environment_but_serve_refuses_its_placeholders() -> None:
    loaded = load_config(EXAMPLE, env={}, purpose="check")
    assert any(w.startswith("slack.bot_token: still a placeholder") for w in loaded.warnings)
    refused = problems_of(EXAMPLE, purpose="serve")
    assert {problem.split(":")[0] for problem in refused} >= {
        "slack.bot_token",
        "slack.signing_secret",
        "alertmanager.webhook_token",
    }


def test_a_missing_variable_is_named_with_where_it_is_used(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(bot_token="${BOT}", kubeconfig="${KUBE_DIR}/prod.yaml"))
    assert problems_of(path) == [
        "slack.bot_token: environment variable BOT is not set",
        "clusters[0].kubeconfig: environment variable KUBE_DIR is not set",
    ]


def test_variables_defaults_and_escapes(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(kubeconfig="'${KUBE_DIR:-/etc/kube}/$${HOME}-${NAME}.yaml'"))
    settings = load_config(path, env={"NAME": "prod"}).settings
    assert settings.clusters[0].kubeconfig == Path("/etc/kube/${HOME}-prod.yaml")


def test_a_variable_cannot_change_the_document_structure(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(signing_secret="${SIGNING}"))
    sneaky = "x\nserver: {port: 1}\n"
    settings = load_config(path, env={"SIGNING": sneaky}).settings
    assert settings.slack.signing_secret == SecretStr(sneaky)
    assert settings.server.port == 8080


def test_a_malformed_reference_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(signing_secret="'${not a name}'"))
    [problem] = problems_of(path)
    assert problem.startswith("slack.signing_secret: malformed variable reference")


def test_substituted_values_are_then_validated_as_their_type(tmp_path: Path) -> None:
    path = write(tmp_path, minimal() + "server:\n  port: ${PORT}\n")
    assert load_config(path, env={"PORT": "9090"}).settings.server.port == 9090
    assert [p.split(":")[0] for p in problems_of(path, env={"PORT": "http"})] == ["server.port"]


@pytest.mark.parametrize(("variable", "loc"), sorted(SECRET_OVERRIDES.items()))
def test_every_secret_has_an_environment_override(
    tmp_path: Path, variable: str, loc: tuple[str, ...]
) -> None:
    values = {
        "PROXYBOT_SLACK_BOT_TOKEN": "xoxb-from-env",
        "PROXYBOT_SLACK_APP_TOKEN": "xapp-from-env",
        "PROXYBOT_STORE_URL": "postgresql://bot:pw@db/proxybot",
    }
    value = values.get(variable, "from-env")
    alertmanager = "{webhook_username: am}" if variable.endswith("WEBHOOK_PASSWORD") else "{}"
    text = minimal(bot_token="xoxb-from-file", alertmanager=alertmanager)
    if variable == "PROXYBOT_PLATFORM_ACCESS_KEY":  # a key means something only with the platform's URL
        text += "platform: {url: 'https://platform.example.com'}\n"
    path = write(tmp_path, text)
    loaded = load_config(path, env={variable: value})
    found = dict(secret_fields(loaded.settings))
    assert found[loc] == SecretStr(value)
    assert loaded.env_overrides == (variable,)


def test_an_override_replaces_a_reference_to_a_missing_variable(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(bot_token="${UNSET_IN_THIS_ENVIRONMENT}"))
    settings = load_config(path, env={"PROXYBOT_SLACK_BOT_TOKEN": "xoxb-from-env"}).settings
    assert settings.slack.bot_token == SecretStr("xoxb-from-env")


def test_every_secret_field_is_in_the_override_table() -> None:
    slack, platform = (
        {"default_channel": "#a"},
        {"url": "https://platform.example.com", "access_key_file": "k"},
    )
    settings = Settings.model_validate({"slack": slack, "platform": platform, "clusters": [
        {"name": "c", "kubeconfig": "k", "match": {"c": "c"}, "targets": [
            {"name": "p/t", "group_versions": ["a.example.com/v1"],
             "probe": {"group_version": "a.example.com/v1", "resource": "xs"}}]}]})  # fmt: skip
    assert {loc for loc, _ in secret_fields(settings)} == set(SECRET_OVERRIDES.values())


def test_an_empty_override_counts_as_unset(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(bot_token="xoxb-from-file"))
    settings = load_config(path, env={"PROXYBOT_SLACK_BOT_TOKEN": ""}).settings
    assert settings.slack.bot_token == SecretStr("xoxb-from-file")


def test_secrets_are_read_from_files_named_as_their_variables_in_the_secrets_dir(tmp_path: Path) -> None:
    """A Secret mounted as a volume: its files are the overrides; a variable set still wins over its file."""
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "PROXYBOT_SLACK_BOT_TOKEN").write_text("xoxb-from-a-file\n")
    (secrets / "PROXYBOT_SLACK_SIGNING_SECRET").write_text("signing-from-a-file")
    (secrets / "PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN").write_text("")  # an empty file counts as unset
    kube = kubeconfig(tmp_path / "prod.kubeconfig", "prod")
    path = write(tmp_path, minimal(bot_token="changeme", signing_secret="changeme", kubeconfig=str(kube)))
    env = {"PROXYBOT_SECRETS_DIR": str(secrets), "PROXYBOT_SLACK_SIGNING_SECRET": "signing-from-env"}
    loaded = load_config(path, env=env, purpose="serve")
    assert loaded.settings.slack.bot_token == SecretStr("xoxb-from-a-file")
    assert loaded.settings.slack.signing_secret == SecretStr("signing-from-env")
    assert loaded.settings.alertmanager.webhook_token == SecretStr("real-webhook-token")
    assert loaded.env_overrides == ("PROXYBOT_SLACK_BOT_TOKEN", "PROXYBOT_SLACK_SIGNING_SECRET")
    assert loaded.warnings == ()  # PROXYBOT_SECRETS_DIR is a variable proxybot reads


def test_a_secrets_dir_that_is_not_one_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, minimal())
    missing = tmp_path / "nowhere"
    assert problems_of(path, {"PROXYBOT_SECRETS_DIR": str(missing)}) == [
        f"PROXYBOT_SECRETS_DIR: {missing} is not a directory"
    ]


@pytest.mark.parametrize("placeholder", ["changeme", "xoxb-...", "'<bot-token>'", "''", "CHANGEME"])
def test_placeholder_secrets_are_refused_for_serve_and_allowed_for_demo(
    tmp_path: Path, placeholder: str
) -> None:
    kube = kubeconfig(tmp_path / "prod.kubeconfig", "prod")
    path = write(tmp_path, minimal(signing_secret=placeholder, kubeconfig=str(kube)))
    [problem] = problems_of(path, purpose="serve")
    assert problem.startswith("slack.signing_secret: ")
    assert "PROXYBOT_SLACK_SIGNING_SECRET" in problem
    assert load_config(path, env={}, purpose="demo").settings.clusters[0].name == "prod"
    [warning] = load_config(path, env={}, purpose="check").warnings
    assert warning.startswith("slack.signing_secret: ")


def test_serve_needs_a_signing_secret_only_in_http_mode(tmp_path: Path) -> None:
    kube = kubeconfig(tmp_path / "prod.kubeconfig", "prod")
    path = write(tmp_path, minimal(signing_secret="''", kubeconfig=str(kube)))
    socket_mode = {"PROXYBOT_SLACK_APP_TOKEN": "xapp-1-real"}
    assert load_config(path, env=socket_mode, purpose="serve").settings.slack.signing_secret is None


def test_serve_refuses_missing_kubeconfigs_that_check_only_warns_about(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(kubeconfig="kube/missing.yaml"))
    [problem] = problems_of(path, purpose="serve")
    missing = tmp_path / "kube/missing.yaml"
    assert problem == f"clusters[0].kubeconfig: {missing} (the kubeconfig of cluster prod) does not exist"
    assert len(load_config(path, env={}).warnings) == 1


def test_relative_kubeconfigs_resolve_against_the_config_directory_not_the_working_one(
    tmp_path: Path,
) -> None:
    config_dir = tmp_path / "etc"
    config_dir.mkdir()
    kubeconfig(config_dir / "prod.kubeconfig", "prod")
    path = write(config_dir, minimal(kubeconfig="prod.kubeconfig"))
    assert Path.cwd() != config_dir
    loaded = load_config(path, env={}, purpose="serve")
    assert loaded.settings.clusters[0].kubeconfig == config_dir / "prod.kubeconfig"
    assert loaded.warnings == ()


def test_a_context_missing_from_the_kubeconfig_is_an_error(tmp_path: Path) -> None:
    kubeconfig(tmp_path / "prod.kubeconfig", "a", "b")
    text = minimal().replace(
        "    kubeconfig: prod.kubeconfig\n", "    kubeconfig: prod.kubeconfig\n    context: c\n"
    )
    path = write(tmp_path, text)
    assert problems_of(path) == [
        f"clusters[0].context: 'c' is not a context in {tmp_path}/prod.kubeconfig (the kubeconfig of "
        "cluster prod); it has: a, b"
    ]


def test_unknown_keys_name_their_path_and_suggest_the_right_one(tmp_path: Path) -> None:
    text = (
        minimal().replace("slack:\n", "slak: {}\nslack:\n").replace("resource: accounts", "resorce: accounts")
    )
    path = write(tmp_path, text)
    found = problems_of(path)
    assert "slak: unknown key; did you mean 'slack'?" in found
    assert "clusters[0].targets[0].probe.resorce: unknown key; did you mean 'resource'?" in found
    assert "clusters[0].targets[0].probe.resource: required key is missing" in found


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = (
        minimal().replace("payments/ledger", "Payments").replace("resource: accounts", "resource: ../secrets")
    )
    path = write(tmp_path, text + "server: {port: 0}\nbogus: 1\n")
    locations = [problem.split(":")[0] for problem in problems_of(path)]
    assert sorted(locations) == sorted(
        ["clusters[0].targets[0].name", "clusters[0].targets[0].probe.resource", "server.port", "bogus"]
    )


def test_a_single_invalid_item_does_not_also_report_an_empty_list(tmp_path: Path) -> None:
    path = write(tmp_path, minimal().replace("payments/ledger", "bad"))
    assert [problem.split(":")[0] for problem in problems_of(path)] == ["clusters[0].targets[0].name"]


def test_secret_values_never_appear_in_problems(tmp_path: Path) -> None:
    alertmanager = "{url: 'ftp://u:TOPSECRET-4@am', webhook_token: 5}"
    text = minimal(bot_token="xapp-TOPSECRET-1", signing_secret="TOPSECRET-2", alertmanager=alertmanager)
    text += "store: {url: 'mysql://u:TOPSECRET-3@db/x'}\n"
    path = write(tmp_path, text)
    found = problems_of(path, env={"PROXYBOT_ALERTMANAGER_WEBHOOK_PASSWORD": "TOPSECRET-5"})
    assert len(found) >= 4
    assert "TOPSECRET" not in "\n".join(found)


def test_yaml_syntax_errors_name_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "slack:\n  default_channel: '#a'\n clusters: [\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path} line 3")
    assert "YAML syntax error" in problem


def test_a_key_given_twice_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, minimal() + "server: {}\nserver: {port: 1}\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path} line {minimal().count(chr(10)) + 2}")
    assert "'server' appears twice" in problem


@pytest.mark.parametrize(("text", "message"), [("", "the file is empty"), ("- a\n", "must be a mapping")])
def test_the_top_level_must_be_a_mapping(tmp_path: Path, text: str, message: str) -> None:
    [problem] = problems_of(write(tmp_path, text))
    assert message in problem


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    assert problems_of(tmp_path / "nope.yaml") == [
        f"{tmp_path / 'nope.yaml'}: no such file (pass --config or set PROXYBOT_CONFIG)"
    ]


def test_proxybot_config_names_the_file_when_no_path_is_given(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(), name="elsewhere.yaml")
    loaded = load_config(None, env={"PROXYBOT_CONFIG": str(path)})
    assert loaded.path == path


def test_embedded_config_text_validates_against_a_given_directory(tmp_path: Path) -> None:
    loaded = parse_config(minimal(), base_dir=tmp_path, env={}, purpose="demo")
    assert loaded.settings.clusters[0].kubeconfig == tmp_path / "prod.kubeconfig"
    assert loaded.path is None


@pytest.mark.parametrize(
    ("loc", "text"),
    [
        (("clusters", 1, "targets", 0, "probe", "resource"), "clusters[1].targets[0].probe.resource"),
        (("match", "app.kubernetes.io/name"), "match['app.kubernetes.io/name']"),
        (("clusters", 0, "match", "bad-label", "[key]"), "clusters[0].match.bad-label"),
        ((), "(top level)"),
    ],
)
def test_locations_read_like_paths(loc: tuple[str | int, ...], text: str) -> None:
    assert format_loc(loc) == text


def test_an_unquoted_hash_channel_is_a_comment_and_the_problem_says_to_quote_it(tmp_path: Path) -> None:
    text = minimal().replace(
        "    match: {cluster: prod}\n", "    match: {cluster: prod}\n    channel: #prod-eu\n"
    )
    path = write(tmp_path, text)
    line = text.splitlines().index("    channel: #prod-eu") + 1
    assert problems_of(path) == [
        f"{path} line {line}: `channel: #prod-eu` is a YAML comment, not a channel, so no channel is set; "
        'quote it: channel: "#prod-eu"'
    ]


def test_an_unquoted_default_channel_is_named_before_the_missing_channel_it_causes(tmp_path: Path) -> None:
    path = write(
        tmp_path, minimal().replace("default_channel: C0ALERTS01", "default_channel:   #alerts # ops")
    )
    assert problems_of(path) == [
        f"{path} line 2: `default_channel: #alerts` is a YAML comment, not a channel, so no channel is set; "
        'quote it: default_channel: "#alerts"',
        "slack.default_channel: required: alerts that match no cluster are posted there",
    ]


def test_a_channel_left_empty_is_unset_not_a_comment(tmp_path: Path) -> None:
    text = minimal().replace("    match: {cluster: prod}\n", "    match: {cluster: prod}\n    channel:\n")
    assert load_config(write(tmp_path, text), env={}).settings.clusters[0].channel is None


def test_proxybot_variables_that_mean_nothing_are_warned_about_for_check_and_serve(tmp_path: Path) -> None:
    kube = kubeconfig(tmp_path / "prod.kubeconfig", "prod")
    path = write(tmp_path, minimal(kubeconfig=str(kube)))
    env = {"PROXYBOT_SLACK_TOKEN": "xoxb-1-real", "PROXYBOT_SERVER_PORT": "9000", "SLACK_TOKEN": "x"}
    expected = (
        "PROXYBOT_SERVER_PORT: set, but proxybot reads no such variable, so it changes nothing; server.port "
        "is set in the config file (`${PROXYBOT_SERVER_PORT}` there reads this variable)",
        "PROXYBOT_SLACK_TOKEN: set, but proxybot reads no such variable, so it changes nothing; did you mean "
        "PROXYBOT_SLACK_BOT_TOKEN?",
    )
    assert load_config(path, env=env, purpose="check").warnings == expected
    assert load_config(path, env=env, purpose="serve").warnings == expected
    assert load_config(path, env=env, purpose="demo").warnings == ()
