"""`platform:` in the config: its URL and key (from the environment or a file, never the file itself),
`clusters:` optional beside it, and the refinements' problems located in `clusters:`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.errors import ConfigError
from config.loader import load_config
from config.platform import ACCESS_KEY_ENV
from tests.config.test_loader import kubeconfig
from tests.fakes.config_data import LISTED_CLIENT_YAML

KEY = "lk-3f9a1c0e-the-real-access-key"
SLACK = "slack: {default_channel: '#alerts'}\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "proxybot.yaml"
    path.write_text(SLACK + textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(path: Path, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(path, env=env or {}, purpose="check")
    return list(caught.value.problems)


def test_a_platform_with_a_key_file_needs_no_clusters(tmp_path: Path) -> None:
    path = write(tmp_path, "platform: {url: 'https://platform.example.com', access_key_file: key}\n")
    settings = load_config(path, env={}).settings
    assert settings.clusters == ()
    assert settings.refinements == ()
    platform = settings.platform
    assert platform is not None
    assert platform.url == "https://platform.example.com"
    assert platform.access_key is None
    assert platform.access_key_file == tmp_path / "key"  # relative to the config's directory
    assert (platform.projects, platform.refresh, platform.timeout) == ((), 60.0, 10.0)
    assert (platform.ca_file, platform.cluster_label, platform.project_channels) == (None, None, {})


def test_the_key_from_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, "platform: {url: 'https://platform.example.com'}\n")
    loaded = load_config(path, env={ACCESS_KEY_ENV: KEY})
    assert loaded.settings.platform is not None
    assert loaded.settings.platform.access_key == SecretStr(KEY)
    assert loaded.env_overrides == (ACCESS_KEY_ENV,)
    assert KEY not in repr(loaded.settings)


def test_the_key_from_a_file_in_the_secrets_dir(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / ACCESS_KEY_ENV).write_text(KEY + "\n")
    path = write(tmp_path, "platform: {url: 'https://platform.example.com'}\n")
    settings = load_config(path, env={"PROXYBOT_SECRETS_DIR": str(secrets)}).settings
    assert settings.platform is not None
    assert settings.platform.access_key is not None
    assert settings.platform.access_key.get_secret_value().strip() == KEY


def test_the_url_is_required(tmp_path: Path) -> None:
    path = write(tmp_path, "platform: {access_key_file: key}\n")
    assert problems_of(path) == ["platform.url: required key is missing"]


@pytest.mark.parametrize("url", ["platform.example.com", "ftp://platform.example.com", ""])
def test_the_url_is_an_http_url(tmp_path: Path, url: str) -> None:
    path = write(tmp_path, f"platform: {{url: '{url}', access_key_file: key}}\n")
    assert [p.split(":")[0] for p in problems_of(path)] == ["platform.url"]


def test_a_key_is_required(tmp_path: Path) -> None:
    path = write(tmp_path, "platform: {url: 'https://platform.example.com'}\n")
    (problem,) = problems_of(path)
    assert problem.startswith("platform.access_key_file: ")
    assert ACCESS_KEY_ENV in problem


def test_an_empty_key_in_the_environment_is_no_key(tmp_path: Path) -> None:
    path = write(tmp_path, "platform: {url: 'https://platform.example.com'}\n")
    (problem,) = problems_of(path, env={ACCESS_KEY_ENV: ""})
    assert problem.startswith("platform.access_key_file: ")


def test_the_key_from_both_the_environment_and_a_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "platform: {url: 'https://platform.example.com', access_key_file: key}\n")
    (problem,) = problems_of(path, env={ACCESS_KEY_ENV: KEY})
    assert problem.startswith("platform.access_key_file: ")
    assert "not both" in problem
    assert KEY not in problem


def test_the_key_written_in_the_file_is_refused_naming_the_variable(tmp_path: Path) -> None:
    path = write(tmp_path, f"platform: {{url: 'https://platform.example.com', access_key: {KEY}}}\n")
    problems = problems_of(path)
    assert any(p.startswith("platform.access_key: ") and ACCESS_KEY_ENV in p for p in problems), problems
    assert not any(KEY in p for p in problems)
    # Also with the variable set: the file still may not hold it.
    with_env = problems_of(path, env={ACCESS_KEY_ENV: "another-key"})
    assert any(p.startswith("platform.access_key: ") for p in with_env), with_env
    # And with a reference to a variable: a key written there is still written in the file.
    path = write(tmp_path, "platform: {url: 'https://platform.example.com', access_key: '${MY_KEY}'}\n")
    assert any(p.startswith("platform.access_key: ") for p in problems_of(path, env={"MY_KEY": KEY}))


def test_without_platform_clusters_are_required(tmp_path: Path) -> None:
    path = write(tmp_path, "store: {}\n")
    (problem,) = problems_of(path)
    assert problem.startswith("clusters: ")
    assert "platform" in problem


def test_without_platform_an_entry_without_kubeconfig_is_a_client_missing_one(tmp_path: Path) -> None:
    path = write(tmp_path, "clusters:\n  - name: team-a\n    channel: '#a'\n")
    problems = problems_of(path)
    assert "clusters[0].kubeconfig: required key is missing" in problems, problems


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("refresh", "1s"),
        ("refresh", "2h"),
        ("timeout", "0.5"),
        ("projects", "[Payments]"),
        ("project_channels", "{payments: 'not a channel'}"),
        ("project_channels", "{Payments: '#payments'}"),
        ("cluster_label", "'k8s-cluster'"),
        ("ca_file", "[a]"),
        ("namespace_prefix", "p-"),
    ],
)
def test_each_platform_field_is_checked(tmp_path: Path, field: str, value: str) -> None:
    text = f"platform:\n  url: https://platform.example.com\n  access_key_file: key\n  {field}: {value}\n"
    problems = problems_of(write(tmp_path, text))
    assert problems
    assert all(p.startswith(f"platform.{field}") for p in problems), problems


def test_the_platform_fields_read(tmp_path: Path) -> None:
    text = """\
        platform:
          url: https://platform.example.com/
          access_key_file: /run/secrets/platform-key
          ca_file: platform-ca.pem
          projects: [payments, data]
          refresh: 2m
          timeout: 5s
          project_channels: {payments: '#payments-alerts', data: C0DATA0001}
          cluster_label: k8s_cluster
        """
    settings = load_config(write(tmp_path, text), env={}).settings
    platform = settings.platform
    assert platform is not None
    assert platform.access_key_file == Path("/run/secrets/platform-key")
    assert platform.ca_file == tmp_path / "platform-ca.pem"
    assert (platform.projects, platform.refresh, platform.timeout) == (("payments", "data"), 120.0, 5.0)
    assert platform.project_channels == {"payments": "#payments-alerts", "data": "C0DATA0001"}
    assert platform.cluster_label == "k8s_cluster"


def test_with_platform_entries_without_kubeconfig_refine_and_the_others_are_listed(tmp_path: Path) -> None:
    text = (
        "platform: {url: 'https://platform.example.com', access_key_file: key}\n"
        "clusters:\n"
        "  - name: team-a\n"
        "    channel: '#team-a'\n"
        "    probe_namespace: probes\n"
        "    match: {namespace: vcluster-team-a, cluster: eu-1}\n"
        "    direct:\n"
        "      platform/crd-store: {kubeconfig: crd-store.kubeconfig, context: admin}\n"
        + LISTED_CLIENT_YAML
        + "  - name: team-b\n"
        "    escalation: {after: 10m}\n"
    )
    kubeconfig(tmp_path / "prod.kubeconfig", "prod")
    settings = load_config(write(tmp_path, text), env={}).settings
    assert [c.name for c in settings.clusters] == ["prod"]
    assert [r.name for r in settings.refinements] == ["team-a", "team-b"]
    team_a = settings.refinements[0]
    assert (team_a.channel, team_a.probe_namespace) == ("#team-a", "probes")
    assert team_a.match == {"namespace": "vcluster-team-a", "cluster": "eu-1"}
    direct = team_a.direct["platform/crd-store"]
    assert (direct.kubeconfig, direct.context) == (tmp_path / "crd-store.kubeconfig", "admin")
    assert settings.refinements[1].escalation.after == 600.0


def test_a_refinements_problems_are_located_at_its_place_in_clusters(tmp_path: Path) -> None:
    text = (
        "platform: {url: 'https://platform.example.com', access_key_file: key}\n"
        "clusters:\n" + LISTED_CLIENT_YAML + "  - name: Team_A\n"
        "  - name: team-b\n"
        "    match: {}\n"
        "    channel: 'team b'\n"
        "  - name: team-c\n"
        "    probe_namespace: Probes\n"
        "    direct: {crd-store: {kubeconfig: k}}\n"
        "  - name: team-d\n"
        "    targets: []\n"
    )
    kubeconfig(tmp_path / "prod.kubeconfig", "prod")
    problems = problems_of(write(tmp_path, text))
    located = sorted({p.split(": ", 1)[0] for p in problems})
    assert located == [
        "clusters[1].name",
        "clusters[2].channel",
        "clusters[2].match",
        "clusters[3].direct.crd-store",
        "clusters[3].probe_namespace",
        "clusters[4].targets",
    ], problems


def test_a_listed_clients_problems_keep_its_place_when_a_refinement_comes_first(tmp_path: Path) -> None:
    text = (
        "platform: {url: 'https://platform.example.com', access_key_file: key}\n"
        "clusters:\n"
        "  - name: team-a\n"
        "    channel: '#team-a'\n" + LISTED_CLIENT_YAML.replace("resource: accounts", "resource: Accounts")
    )
    kubeconfig(tmp_path / "prod.kubeconfig", "prod")
    problems = problems_of(write(tmp_path, text))
    assert [p.split(": ", 1)[0] for p in problems] == ["clusters[1].targets[0].probe.resource"]
