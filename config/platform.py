"""The vCluster Platform in the settings (`platform:`), and what a `clusters:` entry adds to a client found.

With `platform:` set, the bot lists the platform's VirtualClusterInstances with one access key and derives
every client and target from them (`bot/fleet/`); `clusters:` becomes optional. An entry of `clusters:`
with a `kubeconfig` is a client listed by hand, as without the platform; one without names a discovered
client and refines it (`ClusterRefinement`).

The access key is a secret: `PROXYBOT_PLATFORM_ACCESS_KEY` (or its file in `PROXYBOT_SECRETS_DIR`), or
`access_key_file`, re-read when it rotates; never the config file itself (the loader refuses it there).
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field
from pydantic import model_validator as _model_validator

from config.clusters import KubeAccess
from config.escalation import EscalationOverride
from config.fields import (
    ConfigPath,
    DnsLabel,
    Duration,
    HttpUrl,
    LabelName,
    Loc,
    NonEmpty,
    OptionalSecret,
    SlackChannel,
    StrictModel,
    TargetName,
    raise_if_any,
)

# The annotation on a client's VirtualClusterInstance naming the Slack channel its alerts go to.
CHANNEL_ANNOTATION = "proxybot.io/slack-channel"
ACCESS_KEY_ENV = "PROXYBOT_PLATFORM_ACCESS_KEY"


class PlatformSettings(StrictModel):
    """The platform the fleet is read from: its URL, the key, the CA, which projects, how often."""

    url: HttpUrl
    # Set only by PROXYBOT_PLATFORM_ACCESS_KEY (the loader refuses it in the file).
    access_key: OptionalSecret = None
    access_key_file: ConfigPath | None = None
    ca_file: ConfigPath | None = None
    # The projects to read; empty: every project the key may see.
    projects: tuple[DnsLabel, ...] = ()
    # How often the fleet is listed again: instances added, removed or changed apply within this.
    refresh: Annotated[Duration, Field(ge=5.0, le=3600.0)] = 60.0
    # One request to the platform (a list, a Self) waits at most this long; the last fleet is kept.
    timeout: Annotated[Duration, Field(ge=1.0, le=60.0)] = 10.0
    # A discovered client's channel when its instance carries no `proxybot.io/slack-channel` annotation.
    project_channels: dict[DnsLabel, SlackChannel] = Field(default_factory=dict)
    # With several control plane clusters: the alert label naming the connected cluster a scrape came from.
    cluster_label: LabelName | None = None

    @_model_validator(mode="after")
    def _one_key(self) -> Self:
        problems: list[tuple[Loc, str]] = []
        if self.access_key is None and self.access_key_file is None:
            problems.append((("access_key_file",), f"set it, or {ACCESS_KEY_ENV}: the platform needs a key"))
        elif self.access_key is not None and self.access_key_file is not None:
            problems.append((("access_key_file",), f"set it or {ACCESS_KEY_ENV}, not both"))
        raise_if_any(problems)
        return self


class ClusterRefinement(StrictModel):
    """A `clusters:` entry without `kubeconfig`: what it adds to the discovered client of that name."""

    name: DnsLabel
    # Alert labels that say an alert is this client's, instead of its control plane's namespace.
    match: NonEmpty[dict[LabelName, str]] | None = None
    channel: SlackChannel | None = None
    escalation: EscalationOverride = EscalationOverride()
    # The namespace every probe of this client's targets lists in (default `default`).
    probe_namespace: DnsLabel | None = None
    # A target reached directly instead of through the platform (path checks): target -> its access.
    direct: dict[TargetName, KubeAccess] = Field(default_factory=dict)
