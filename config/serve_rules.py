"""What `serve` needs beyond valid settings: real secrets, webhook authentication, kubeconfigs that load,
the credential and CA files of the Prometheus and Alertmanager clients; and the grants that should name
their channel by ID.

`serve` refuses every problem found here; `check` refuses the ones that are wrong wherever the config is
read (a kubeconfig that is not one) and warns about the rest (a placeholder secret, a file mounted only at
deploy time); `demo` asks none of it. A grant given to a `#name` is warned about by both `check` and
`serve` (which logs it): it holds for whichever channel bears the name now.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, SecretStr

from config import validation
from config.clusters import ClusterSettings, ControlPlaneSettings, KubeAccess
from config.environment import env_hint
from config.fields import Loc, format_loc
from config.kubeconfig import KubeconfigUse, Problem, kubeconfig_problems
from config.settings import Settings

Purpose = Literal["serve", "demo", "check"]
REFUSED_BY_SERVE = " (`serve` refuses this)"


def purpose_problems(settings: Settings, purpose: Purpose) -> tuple[list[str], list[str]]:
    """(errors, warnings) for loading with this purpose."""
    if purpose == "demo":
        return [], []
    found = [
        *_secret_problems(settings),
        *_webhook_problems(settings),
        *_kubeconfig_problems(settings),
        *_client_file_problems(settings),
    ]
    advice = list(grants_by_name(settings))
    if purpose == "serve":
        return [problem for problem, _ in found], advice
    errors = [problem for problem, fatal_for_check in found if fatal_for_check]
    warnings = [f"{problem}{REFUSED_BY_SERVE}" for problem, fatal in found if not fatal]
    return errors, warnings + advice


def grants_by_name(settings: Settings) -> Iterator[str]:
    """A warning per channel granted queries by its `#name` (in `access.channels`, or as an alert channel
    while `access.alert_channels_may_query` is on): Slack lets a channel be renamed and its name taken by a
    new channel, which then holds the grant. A channel ID (C…) names one channel for good."""
    for index, grant in enumerate(settings.access.channels):
        if grant.channel.startswith("#"):
            yield f"{format_loc(('access', 'channels', index, 'channel'))}: {grant.channel!r} {_BY_NAME}"
    if not settings.access.alert_channels_may_query:
        return
    named: dict[str, Loc] = {}
    for index, cluster in enumerate(settings.clusters):
        loc: Loc = ("clusters", index, "channel") if cluster.channel else ("slack", "default_channel")
        channel = settings.alert_channel(cluster)
        if channel is not None and channel.startswith("#"):
            named.setdefault(channel, loc)
    for channel, where in named.items():
        yield f"{format_loc(where)}: {channel!r}, an alert channel, may query its clusters by name " + (
            f"(access.alert_channels_may_query); {_BY_NAME.removeprefix('grants queries by name: ')}"
        )


_BY_NAME = (
    "grants queries by name: whichever channel bears that name now holds the grant (renamed, the channel "
    "loses it; a new channel given the name takes it over); name the channel by its ID (C0123ABCDE: in "
    "Slack, the channel's details, at the bottom)"
)


def secret_fields(model: BaseModel, loc: Loc = ()) -> Iterator[tuple[Loc, SecretStr | None]]:
    """Every SecretStr field of a settings tree (set or not), with its location."""
    for name in type(model).model_fields:
        value = getattr(model, name)
        annotation = type(model).model_fields[name].annotation
        if isinstance(value, SecretStr) or (value is None and _mentions(annotation, SecretStr)):
            yield (*loc, name), value
        elif isinstance(value, BaseModel):
            yield from secret_fields(value, (*loc, name))
        elif isinstance(value, tuple):
            for index, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from secret_fields(item, (*loc, name, index))


def _mentions(annotation: Any, kind: type) -> bool:
    return annotation is kind or any(_mentions(arg, kind) for arg in get_args(annotation))


def _secret_problems(settings: Settings) -> Iterator[Problem]:
    required = {("slack", "bot_token")}
    if settings.slack.app_token is None:
        required.add(("slack", "signing_secret"))  # HTTP mode verifies Slack's request signatures
    for loc, secret in secret_fields(settings):
        if secret is None:
            if loc in required:
                yield f"{format_loc(loc)}: required to serve; set it{env_hint(loc)}", False
        elif validation.is_placeholder_secret(secret.get_secret_value()):
            yield f"{format_loc(loc)}: still a placeholder; put the real secret{env_hint(loc)}", False


def _webhook_problems(settings: Settings) -> Iterator[Problem]:
    alertmanager = settings.alertmanager
    authenticated = alertmanager.webhook_token is not None or alertmanager.webhook_username is not None
    if authenticated or alertmanager.allow_unauthenticated:
        return
    loc = ("alertmanager", "webhook_token")
    yield (
        f"{format_loc(loc)}: no webhook authentication (neither webhook_token nor webhook_username/"
        "webhook_password): anyone who can reach POST /alertmanager can post alerts into Slack; set a token"
        f"{env_hint(loc)} and the same in Alertmanager's receiver (config/alertmanager/receiver.yaml), or "
        "set alertmanager.allow_unauthenticated: true if that is meant",
        False,
    )


def _client_file_problems(settings: Settings) -> Iterator[Problem]:
    """The files the Prometheus and Alertmanager clients read at start: missing or empty only warns in
    `check` (they may be mounted at deploy time); a CA bundle that is no PEM is wrong anywhere."""
    for section, client in (("prometheus", settings.prometheus), ("alertmanager", settings.alertmanager)):
        files = [("bearer_token_file", client.bearer_token_file), ("ca_file", client.ca_file)]
        if client.basic_auth is not None:
            files.append(("basic_auth.password_file", client.basic_auth.password_file))
        for key, path in files:
            if path is not None:
                yield from _client_file_problem(f"{section}.{key}", path, is_ca=key == "ca_file")


def _client_file_problem(where: str, path: Path, *, is_ca: bool) -> Iterator[Problem]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        yield f"{where}: {path} does not exist", False
        return
    except (OSError, UnicodeDecodeError) as err:
        yield f"{where}: cannot read {path}: {getattr(err, 'strerror', None) or type(err).__name__}", False
        return
    if not text.strip():
        yield f"{where}: {path} is empty", False
    elif is_ca:
        try:
            ssl.create_default_context(cadata=text)
        except ssl.SSLError:
            yield f"{where}: {path} is not a PEM CA bundle (no certificate loads from it)", True


def _kubeconfig_problems(settings: Settings) -> Iterator[Problem]:
    # A file several parts use (a control plane's, also its targets'): judged once, each problem said once.
    by_file: dict[Path, list[KubeconfigUse]] = {}
    for use in kubeconfig_uses(settings):
        by_file.setdefault(use.path, []).append(use)
    for uses in by_file.values():
        yield from kubeconfig_problems(_one_use(uses))


def _one_use(uses: list[KubeconfigUse]) -> KubeconfigUse:
    """One file's uses as one: located at the first, naming every owner, each context read once (at the
    first place it is configured)."""
    if len(uses) == 1:
        return uses[0]
    contexts: dict[str | None, Loc] = {}
    for use in uses:
        for loc, context in use.contexts:
            contexts.setdefault(context, loc)
    owners = [use.owner for use in uses]
    owner = f"{', '.join(owners[:-1])} and {owners[-1]}"
    return KubeconfigUse(uses[0].loc, owner, uses[0].path, tuple((loc, c) for c, loc in contexts.items()))


def kubeconfig_uses(settings: Settings) -> Iterator[KubeconfigUse]:
    """Every kubeconfig the config names: each cluster's (and its replicas' contexts), each target's direct
    access, and the control planes'."""
    for index, cluster in enumerate(settings.clusters):
        loc: Loc = ("clusters", index)
        yield _cluster_use(loc, cluster)
        plane = f"cluster {cluster.name}'s control plane"
        yield from _access((*loc, "control_plane"), plane, cluster.control_plane)
        for t_index, target in enumerate(cluster.targets):
            target_loc = (*loc, "targets", t_index)
            yield from _access((*target_loc, "direct"), f"target {target.name}", target.direct)
            owner = f"target {target.name}'s control plane"
            yield from _access((*target_loc, "control_plane"), owner, target.control_plane)


def _cluster_use(loc: Loc, cluster: ClusterSettings) -> KubeconfigUse:
    # Each addressable replica is read through its own context of the cluster's kubeconfig.
    replicas = tuple(((*loc, "replicas", pod), context) for pod, context in cluster.replicas.items())
    contexts = (((*loc, "context"), cluster.context), *replicas)
    return KubeconfigUse(loc, f"cluster {cluster.name}", cluster.kubeconfig, contexts)


def _access(
    loc: Loc, owner: str, access: KubeAccess | ControlPlaneSettings | None
) -> Iterator[KubeconfigUse]:
    if access is not None:
        yield KubeconfigUse(loc, owner, access.kubeconfig, (((*loc, "context"), access.context),))
