"""Every configured kubeconfig is judged before it is loaded: a mistake names the key, the file and whose."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.aio.config.config_exception import ConfigException
from kubernetes.aio.config.kube_config import KubeConfigLoader

from bot.errors import ConfigError
from config.kubeconfig import KubeconfigUse, kubeconfig_problems
from config.loader import load_config
from config.serve_rules import Purpose
from sim.kubeconfig import kubeconfig as sim_kubeconfig
from tests.fakes.config_data import KUBECONFIG

GOOD = KUBECONFIG

CONFIG = """\
slack: {default_channel: C0ALERTS01, bot_token: xoxb-1-real, signing_secret: real-signing}
alertmanager: {webhook_token: real-webhook-token}
clusters:
  - name: prod
    kubeconfig: prod.kubeconfig
    match: {cluster: prod}
    targets:
      - name: payments/ledger
        group_versions: [ledger.example.com/v1]
        probe: {group_version: ledger.example.com/v1, resource: accounts}
"""


def edited(**changes: Any) -> dict[str, Any]:
    """GOOD with top-level keys replaced (None removes the key)."""
    document = copy.deepcopy(GOOD)
    for key, value in changes.items():
        key = key.replace("_", "-")
        if value is None:
            document.pop(key, None)
        else:
            document[key] = value
    return document


def problems(tmp_path: Path, text: str, purpose: Purpose = "check", config: str = CONFIG) -> list[str]:
    (tmp_path / "prod.kubeconfig").write_text(text, encoding="utf-8")
    (tmp_path / "proxybot.yaml").write_text(config, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "proxybot.yaml", env={}, purpose=purpose)
    return caught.value.problems


def about(tmp_path: Path, owner: str = "cluster prod") -> str:
    return f"{tmp_path / 'prod.kubeconfig'} (the kubeconfig of {owner})"


def test_a_good_kubeconfig_and_the_simulators_pass(tmp_path: Path) -> None:
    (tmp_path / "prod.kubeconfig").write_text(yaml.safe_dump(GOOD), encoding="utf-8")
    (tmp_path / "proxybot.yaml").write_text(CONFIG, encoding="utf-8")
    assert load_config(tmp_path / "proxybot.yaml", env={}, purpose="serve").warnings == ()
    written = sim_kubeconfig(b"-----BEGIN CERTIFICATE-----\n", {"prod": ("https://127.0.0.1:1", "token")})
    use = KubeconfigUse(("clusters", 0), "cluster prod", tmp_path / "sim.yaml", ((("x",), "prod"),))
    use.path.write_text(yaml.safe_dump(written), encoding="utf-8")
    assert list(kubeconfig_problems(use)) == []


def test_a_file_that_is_not_yaml_is_named_with_the_line(tmp_path: Path) -> None:
    assert problems(tmp_path, "clusters: [\n") == [
        f"clusters[0].kubeconfig: {about(tmp_path)} is not valid YAML (line 2 column 1)"
    ]


def test_a_file_that_is_not_a_mapping_is_not_a_kubeconfig(tmp_path: Path) -> None:
    assert problems(tmp_path, "eyJhbGciOiJSUzI1NiJ9.a-service-account-token\n") == [
        f"clusters[0].kubeconfig: {about(tmp_path)} is not a kubeconfig: expected a mapping with clusters, "
        "contexts and users (what `kubectl config view` prints)"
    ]


@pytest.mark.parametrize("key", ["clusters", "contexts", "users"])
def test_a_kubeconfig_without_one_of_its_lists_is_refused(tmp_path: Path, key: str) -> None:
    assert problems(tmp_path, yaml.safe_dump(edited(**{key: []}))) == [
        f"clusters[0].kubeconfig: {about(tmp_path)} is not a kubeconfig: it lists no {key}"
    ]


def test_an_entry_without_a_name_is_refused(tmp_path: Path) -> None:
    text = yaml.safe_dump(edited(users=[{"user": {"token": "t"}}]))
    assert problems(tmp_path, text) == [
        f"clusters[0].kubeconfig: {about(tmp_path)} is not a kubeconfig: an entry of its users has no name"
    ]


def test_a_configured_context_the_file_lacks_is_named_with_the_ones_it_has(tmp_path: Path) -> None:
    config = CONFIG.replace(
        "    kubeconfig: prod.kubeconfig\n", "    kubeconfig: prod.kubeconfig\n    context: eu\n"
    )
    assert problems(tmp_path, yaml.safe_dump(GOOD), config=config) == [
        f"clusters[0].context: 'eu' is not a context in {about(tmp_path)}; it has: prod"
    ]


def test_no_context_configured_and_no_current_context_is_refused(tmp_path: Path) -> None:
    assert problems(tmp_path, yaml.safe_dump(edited(current_context=None))) == [
        f"clusters[0].kubeconfig: {about(tmp_path)} has no current-context: name one of its contexts (prod) "
        "in `context`"
    ]


def test_a_current_context_that_is_not_a_context_is_refused(tmp_path: Path) -> None:
    assert problems(tmp_path, yaml.safe_dump(edited(current_context="gone"))) == [
        f"clusters[0].kubeconfig: the current-context 'gone' of {about(tmp_path)} is not one of its "
        "contexts (prod)"
    ]


@pytest.mark.parametrize(("key", "name"), [("cluster", "other"), ("user", "admin")])
def test_a_context_naming_an_unlisted_cluster_or_user_is_refused(tmp_path: Path, key: str, name: str) -> None:
    document = edited()
    document["contexts"][0]["context"][key] = name
    assert problems(tmp_path, yaml.safe_dump(document)) == [
        f"clusters[0].kubeconfig: context 'prod' of {about(tmp_path)} names {key} {name!r}, which is not in "
        f"its {key}s"
    ]


def test_a_context_without_a_user_is_refused(tmp_path: Path) -> None:
    document = edited()
    del document["contexts"][0]["context"]["user"]
    assert problems(tmp_path, yaml.safe_dump(document)) == [
        f"clusters[0].kubeconfig: context 'prod' of {about(tmp_path)} names no user"
    ]


NO_CREDENTIALS = [
    {},  # `kubectl config set-credentials --token="$TOKEN"` with TOKEN empty: read before it was filled in
    {"token": ""},
    {"client-certificate-data": "LS0t"},  # a certificate without its key
    {"username": "admin"},  # basic auth without its password
]


@pytest.mark.parametrize("user", NO_CREDENTIALS)
def test_a_user_without_credentials_is_refused_with_the_likely_cause(
    tmp_path: Path, user: dict[str, str]
) -> None:
    text = yaml.safe_dump(edited(users=[{"name": "u", "user": user}]))
    assert problems(tmp_path, text) == [
        f"clusters[0].kubeconfig: user 'u' of {about(tmp_path)} has no credentials (no token, tokenFile, "
        "client certificate, exec or auth-provider), so every request would be anonymous: was it written "
        "from a token Secret before Kubernetes filled the token in?"
    ]


CREDENTIALS = [
    {"token": "t"},
    {"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"},
    {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "get-token"}},
    {"auth-provider": {"name": "oidc"}},
    {"client-certificate-data": "LS0t", "client-key-data": "LS0t"},
    {"client-certificate": "bot.crt", "client-key": "bot.key"},
    {"username": "admin", "password": "p"},
]


@pytest.mark.parametrize("user", CREDENTIALS)
def test_each_way_the_client_authenticates_passes(tmp_path: Path, user: dict[str, Any]) -> None:
    (tmp_path / "prod.kubeconfig").write_text(yaml.safe_dump(edited(users=[{"name": "u", "user": user}])))
    (tmp_path / "proxybot.yaml").write_text(CONFIG, encoding="utf-8")
    assert load_config(tmp_path / "proxybot.yaml", env={}, purpose="serve").warnings == ()


def test_each_replicas_context_must_be_in_the_clusters_kubeconfig(tmp_path: Path) -> None:
    config = CONFIG.replace("    match:", "    replicas: {prod-0: prod, prod-1: prod-1}\n    match:")
    assert problems(tmp_path, yaml.safe_dump(GOOD), config=config) == [
        f"clusters[0].replicas.prod-1: 'prod-1' is not a context in {about(tmp_path)}; it has: prod"
    ]


CONTROL_PLANES = """\
    control_plane: {kubeconfig: prod.kubeconfig}
    targets:
      - name: payments/ledger
        group_versions: [ledger.example.com/v1]
        probe: {group_version: ledger.example.com/v1, resource: accounts}
        direct: {kubeconfig: prod.kubeconfig}
        control_plane: {kubeconfig: prod.kubeconfig}
"""


def test_every_kubeconfig_the_config_names_is_judged_and_names_whose_it_is(tmp_path: Path) -> None:
    # All four name the one file: its problem is said once, at the first, naming every owner.
    config = CONFIG[: CONFIG.index("    targets:")] + CONTROL_PLANES
    owners = (
        "cluster prod, cluster prod's control plane, target payments/ledger and target payments/ledger's "
        "control plane"
    )
    assert problems(tmp_path, "contexts: []\n", config=config) == [
        f"clusters[0].kubeconfig: {about(tmp_path, owners)} is not a kubeconfig: it lists no clusters"
    ]
    # Each its own file: each judged, each named.
    for name in ("plane.yaml", "direct.yaml", "target-plane.yaml"):
        config = config.replace("{kubeconfig: prod.kubeconfig}", f"{{kubeconfig: {name}}}", 1)
    assert [
        problem.split(" (the kubeconfig of ")[1] for problem in problems(tmp_path, "", "serve", config)
    ] == [
        "cluster prod) is not a kubeconfig: expected a mapping with clusters, contexts and users (what "
        "`kubectl config view` prints)",
        "cluster prod's control plane) does not exist",
        "target payments/ledger) does not exist",
        "target payments/ledger's control plane) does not exist",
    ]


def test_a_missing_control_plane_kubeconfig_warns_for_check_and_is_refused_by_serve(tmp_path: Path) -> None:
    config = CONFIG.replace("    match:", "    control_plane: {kubeconfig: cp.yaml}\n    match:")
    message = (
        f"clusters[0].control_plane.kubeconfig: {tmp_path / 'cp.yaml'} (the kubeconfig of cluster prod's "
        "control plane) does not exist"
    )
    assert problems(tmp_path, yaml.safe_dump(GOOD), "serve", config) == [message]
    warnings = load_config(tmp_path / "proxybot.yaml", env={}, purpose="check").warnings
    assert warnings == (f"{message} (`serve` refuses this)",)


REFUSED_BY_THE_CLIENT = [
    "clusters: [\n",
    "just text\n",
    yaml.safe_dump(edited(clusters=[])),
    yaml.safe_dump(edited(contexts=[])),
    yaml.safe_dump(edited(current_context=None)),
    yaml.safe_dump(edited(current_context="gone")),
    yaml.safe_dump(edited(contexts=[{"name": "prod", "context": {"cluster": "other", "user": "u"}}])),
]


@pytest.mark.parametrize("text", REFUSED_BY_THE_CLIENT)
def test_what_we_refuse_the_kubernetes_client_refuses_too(tmp_path: Path, text: str) -> None:
    assert problems(tmp_path, text)
    with pytest.raises((ConfigException, yaml.YAMLError, TypeError, AttributeError)):
        KubeConfigLoader(config_dict=yaml.safe_load(text))


def test_what_we_pass_the_kubernetes_client_loads(tmp_path: Path) -> None:
    assert KubeConfigLoader(config_dict=GOOD).current_context["name"] == "prod"
