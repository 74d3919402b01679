"""The settings models: one `Settings` for the whole YAML file, every section strict (unknown keys fail).

Checks that span several fields raise `config.fields.LocatedProblems`, which carries a location per problem
so the loader can report `clusters[1].targets[0].probe.group_version: ...`, not a whole-model message.
Relative paths resolve against `base_dir` from the validation context (the config file's directory).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from zoneinfo import ZoneInfo

from apscheduler.triggers.cron import CronTrigger
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
)
from pydantic import model_validator as _model_validator

from config import validation
from config.clusters import ClusterSettings, TargetSettings
from config.escalation import EscalationSettings
from config.fields import (
    ConfigPath,
    Duration,
    HttpUrl,
    Loc,
    NonEmpty,
    OptionalSecret,
    SlackChannel,
    SlackUser,
    StrictModel,
    located,
    raise_if_any,
)
from config.platform import ClusterRefinement, PlatformSettings

ALL_CLUSTERS = "*"
CATCH_UP_DEFAULT_MINUTES = 60


class SlackSettings(StrictModel):
    """Slack app credentials and where messages go."""

    bot_token: Annotated[OptionalSecret, AfterValidator(validation.slack_token("xoxb-"))] = None
    signing_secret: Annotated[OptionalSecret, AfterValidator(validation.not_a_slack_token)] = None
    # Set: Socket Mode (no public endpoint needed). Unset: HTTP mode on POST /slack/events.
    app_token: Annotated[OptionalSecret, AfterValidator(validation.slack_token("xapp-"))] = None
    api_url: Annotated[HttpUrl, AfterValidator(validation.with_trailing_slash)] = "https://slack.com/api/"
    default_channel: SlackChannel | None = None


class BasicAuthSettings(StrictModel):
    """HTTP basic auth of the bot to a service: a username, and the password in a file (a mounted Secret)."""

    username: Annotated[str, Field(min_length=1)]
    password_file: ConfigPath


class HttpClientSettings(StrictModel):
    """A service the bot calls over HTTP: its URL, and how the bot authenticates to it and trusts it.

    Credentials come from files, re-read as they rotate (a projected token, a Secret mounted as a file),
    never from the config itself; `ca_file` is the CA bundle that signed the service's certificate.
    """

    url: HttpUrl | None = None
    bearer_token_file: ConfigPath | None = None
    basic_auth: BasicAuthSettings | None = None
    ca_file: ConfigPath | None = None

    @_model_validator(mode="after")
    def _auth_needs_a_url(self) -> Self:
        problems: list[tuple[Loc, str]] = []
        if self.bearer_token_file is not None and self.basic_auth is not None:
            problems.append((("basic_auth",), "set bearer_token_file or basic_auth, not both"))
        if self.url is None:
            problems += [
                ((key,), "means nothing without url (it says how the bot calls that URL)")
                for key in ("bearer_token_file", "basic_auth", "ca_file")
                if getattr(self, key) is not None
            ]
        raise_if_any(problems)
        return self


class AlertmanagerSettings(HttpClientSettings):
    """The Alertmanager that sends webhooks here (`webhook_*`: how it authenticates to the bot) and receives
    silences (`url`, `bearer_token_file`/`basic_auth`, `ca_file`: how the bot calls it)."""

    webhook_token: OptionalSecret = None
    webhook_username: str | None = None
    webhook_password: OptionalSecret = None
    # Without a token or basic auth, anyone who reaches POST /alertmanager can post alerts into Slack:
    # `serve` refuses that unless this says it is meant (e.g. only Alertmanager can reach the pod).
    allow_unauthenticated: bool = False
    # How often the bot reads Alertmanager's silences and asks whether a silenced group's alerts still
    # fire (it notifies nothing about silenced alerts): a change shows on the message within this.
    poll_interval: Annotated[Duration, Field(ge=1.0, le=60.0)] = 15.0

    @_model_validator(mode="after")
    def _one_auth_scheme(self) -> Self:
        problems: list[tuple[Loc, str]] = []
        if (self.webhook_username is None) != (self.webhook_password is None):
            problems.append((("webhook_password",), "webhook_username and webhook_password go together"))
        if self.webhook_token is not None and self.webhook_username is not None:
            problems.append((("webhook_token",), "set webhook_token or webhook_username/password, not both"))
        raise_if_any(problems)
        return self


class PrometheusSettings(HttpClientSettings):
    """The Prometheus that scrapes the client tenant clusters (used by `verify`, enrichment and digests)."""


class StoreSettings(StrictModel):
    """Where accepted alerts and message state survive restarts."""

    url: Annotated[SecretStr, AfterValidator(validation.store_url)] = Field(
        default=SecretStr("sqlite:///proxybot.db"), validate_default=True
    )
    # Several replicas on PostgreSQL: the leader lease's TTL, from which its every timing follows
    # (`bot.lease`). A dead leader's work is taken over within about this long; `serve` refuses a TTL
    # shorter than fencing needs (a Slack call and a notification's enrichment budget must end first).
    lease_seconds: float = Field(default=10.0, ge=1.0, le=300.0)

    @property
    def shared(self) -> bool:
        """Several replicas may share it (PostgreSQL): the leader lease applies. SQLite is one process's."""
        return not self.url.get_secret_value().startswith("sqlite:")

    @property
    def sqlite_path(self) -> Path | None:
        """The database file for a SQLite store, None for Postgres or in-memory."""
        url = self.url.get_secret_value()
        path = url.removeprefix("sqlite:///")
        return Path(path) if url.startswith("sqlite:///") and path != ":memory:" else None


class DigestSettings(StrictModel):
    """The scheduled fleet health digest."""

    enabled: bool = True
    # Standard 5-field crontab, cron's weekday numbering (0 or 7 = Sunday).
    cron: Annotated[str, AfterValidator(validation.crontab)] = "0 8 * * 1-5"
    timezone: Annotated[str, AfterValidator(validation.iana_timezone)] = "UTC"
    channel: SlackChannel | None = None
    # Worker processes that parse and judge the clusters' pages; None: one per CPU of the pod's quota
    # (cgroup cpu.max) and affinity, at most 4 (bot.digest.pool.default_workers). Each costs memory.
    workers: int | None = Field(default=None, ge=1, le=64)
    # At start, post the run missed while proxybot was down: `true` within the hour after its cron time,
    # a number of minutes for another grace, `false` never (the next run comes at the next cron time).
    catch_up: Annotated[bool | int, BeforeValidator(validation.catch_up)] = True

    @property
    def catch_up_seconds(self) -> float | None:
        """How late a missed run may still be posted at start; None: a missed run is not posted."""
        if self.catch_up is True:
            return CATCH_UP_DEFAULT_MINUTES * 60.0
        return None if self.catch_up is False else self.catch_up * 60.0

    def cron_trigger(self) -> CronTrigger:
        """An APScheduler CronTrigger that fires exactly when cron would, in the digest's time zone."""
        crontab = validation.crontab_for_apscheduler(self.cron)
        return CronTrigger.from_crontab(crontab, timezone=ZoneInfo(self.timezone))


class ChannelGrant(StrictModel):
    """A Slack channel and the clusters people in it may query (`*` for all)."""

    channel: SlackChannel
    clusters: NonEmpty[tuple[str, ...]]


class DirectMessageRule(StrictModel):
    """Who may use the bot in a direct message, and for which clusters; nobody by default."""

    users: tuple[SlackUser, ...] = ()
    clusters: tuple[str, ...] = ()


class AccessSettings(StrictModel):
    """Who may ask what. Everything not granted here is refused."""

    channels: tuple[ChannelGrant, ...] = ()
    # The channel a cluster's alerts are posted to may query that cluster (buttons on its alerts work).
    alert_channels_may_query: bool = True
    # Users who may silence, wherever they may also query the cluster.
    silencers: tuple[SlackUser, ...] = ()
    # The longest silence the *Silence…* modal makes (a duration: `7d`, `12h`).
    silence_max: Duration = 7 * 86400.0
    direct_messages: DirectMessageRule = DirectMessageRule()


class EnrichmentSettings(StrictModel):
    """Time budget for reading live state into an alert message."""

    timeout_seconds: float = Field(default=5.0, gt=0, le=60)


class StormSettings(StrictModel):
    """Storm mode: many new alert groups in one channel become one summary and one table of targets."""

    groups: int = Field(default=10, ge=1)  # more new groups than this ...
    window_seconds: float = Field(default=60.0, gt=0)  # ... within this many seconds start a storm
    quiet_seconds: float = Field(default=120.0, gt=0)  # a storm ends after this long without a new group


def _off_or_duration(value: object) -> float:
    """`0` (off), or a duration like `5m`."""
    if not isinstance(value, bool) and value in (0, "0", "0s"):
        return 0.0
    try:
        return validation.duration_seconds(value)
    except ValueError as error:
        raise ValueError(f"{error} (or 0: off)") from None


# A duration that `0` turns off; its JSON schema (the Helm chart's values) takes both forms.
DurationOrOff = Annotated[
    float,
    BeforeValidator(_off_or_duration),
    WithJsonSchema({"type": ["number", "string"], "description": "seconds, or 30s, 10m, 1h, 7d; 0 = off"}),
]


class ResolutionSettings(StrictModel):
    """What the bot does once a group resolves."""

    # Probe its targets again through each affected client and check the path this long after the resolve
    # (30s, 5m), and say in the message's thread whether it held; 0 turns it off.
    verify_after: Annotated[DurationOrOff, Field(le=86400.0)] = 300.0


class ServerSettings(StrictModel):
    """Where `proxybot serve` listens, and how much it logs (`debug` also shows the libraries' own lines)."""

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    log_level: Literal["debug", "info", "warning", "error"] = "info"


@dataclass(frozen=True)
class Requester:
    """Who asks from where: the fields of a slash command or button payload that access depends on."""

    user: str
    channel_id: str
    channel_name: str | None = None
    direct_message: bool = False

    def channel_refs(self) -> frozenset[str]:
        names = {self.channel_id}
        if self.channel_name:
            names.add(f"#{self.channel_name}")
        return frozenset(names)


def _covers(granted: Iterable[str], cluster: str) -> bool:
    return any(name in (ALL_CLUSTERS, cluster) for name in granted)


class Settings(StrictModel):
    """The whole proxybot configuration."""

    slack: SlackSettings = SlackSettings()
    alertmanager: AlertmanagerSettings = AlertmanagerSettings()
    prometheus: PrometheusSettings = PrometheusSettings()
    # Validated from {} so that the default SQLite path, too, resolves against the config's directory.
    store: StoreSettings = Field(default_factory=dict, validate_default=True)
    # The platform the fleet is discovered from; without it, `clusters:` lists every client by hand.
    platform: PlatformSettings | None = None
    clusters: tuple[ClusterSettings, ...] = ()
    # With `platform:`, the `clusters:` entries without a kubeconfig: each refines a discovered client.
    refinements: tuple[ClusterRefinement, ...] = Field(default=(), exclude=True)
    _index: _FleetIndex | None = PrivateAttr(default=None)
    digest: DigestSettings = DigestSettings()
    access: AccessSettings = AccessSettings()
    enrichment: EnrichmentSettings = EnrichmentSettings()
    storm: StormSettings = StormSettings()
    escalation: EscalationSettings = EscalationSettings()
    resolution: ResolutionSettings = ResolutionSettings()
    server: ServerSettings = ServerSettings()

    @_model_validator(mode="before")
    @classmethod
    def _refinements_apart(cls, data: Any, info: ValidationInfo) -> Any:
        """With `platform:`, a `clusters:` entry without `kubeconfig` is a refinement of a discovered client;
        its problems keep their place in `clusters:`."""
        if (
            not isinstance(data, dict)
            or not data.get("platform")
            or not isinstance(data.get("clusters"), list)
        ):
            return data
        listed: list[ClusterSettings] = []
        refining: list[ClusterRefinement] = []
        problems: list[tuple[Loc, str]] = []
        for index, entry in enumerate(data["clusters"]):
            # Each entry validated here, in place, so its problems name its own index in `clusters:`.
            hand = not isinstance(entry, dict) or "kubeconfig" in entry
            try:
                if hand:
                    listed.append(ClusterSettings.model_validate(entry, context=info.context))
                else:
                    refining.append(ClusterRefinement.model_validate(entry, context=info.context))
            except ValidationError as exc:
                problems += [(("clusters", index, *p[0]), p[1]) for p in located(exc)]
        raise_if_any(problems)
        return {**data, "clusters": listed, "refinements": tuple(refining)}

    @_model_validator(mode="after")
    def _fleet_is_consistent(self) -> Self:
        missing: list[tuple[Loc, str]] = []
        if not self.clusters and self.platform is None:
            missing.append((("clusters",), "list at least one client cluster, or set platform"))
        raise_if_any(
            [
                *missing,
                *_duplicate_names(self.clusters),
                *_unrouted_channels(self),
                *_unknown_cluster_refs(self),
            ]
        )
        return self

    def with_fleet(self, clusters: tuple[ClusterSettings, ...]) -> Settings:
        """These settings over another fleet (the platform's, discovered): its consistency checked as the
        file's is, a problem raised as `LocatedProblems`."""
        fleet = self.model_copy(update={"clusters": clusters})
        raise_if_any([*_duplicate_names(clusters), *_unrouted_channels(fleet)])
        return fleet

    def _lookups(self) -> _FleetIndex:
        """The fleet's lookups, built once per `clusters` (a fleet read from the platform is another)."""
        index = self._index
        if index is None or index.clusters is not self.clusters:
            index = self._index = _FleetIndex.of(self.clusters)
        return index

    def cluster(self, name: str) -> ClusterSettings | None:
        return self._lookups().by_name.get(name)

    def find_target(self, name: str) -> tuple[ClusterSettings, TargetSettings] | None:
        """The client cluster proxying to target `<project>/<name>` (the first listed), and that target."""
        found = self._lookups().by_target.get(name)
        return found[0] if found else None

    def forwarders(self, name: str) -> tuple[tuple[ClusterSettings, TargetSettings], ...]:
        """Every client cluster proxying to target `<project>/<name>`, in listed order, with its entry."""
        return tuple(self._lookups().by_target.get(name, ()))

    def cluster_for_alert(self, labels: Mapping[str, str]) -> ClusterSettings | None:
        """The cluster whose `match` fits the labels; the most specific wins, then the first listed.

        Rules that aggregate away the scrape labels (the guide's DiscoveryDegraded keeps only target and
        group_version) carry no `match` label: then the cluster that configures the alert's target is it.
        An alert on a control plane's own object (kube-state-metrics' CronJob series, as the guide's
        ProbeFailing: `namespace` and `cronjob`, scraped in the control plane cluster, so without the
        tenant's labels) is the tenant's whose control-plane namespace it names, before any `match`.
        """
        if "cronjob" in labels:
            owner = self.cluster_for_namespace(labels.get("namespace", ""))
            if owner is not None:
                return owner
        fitting = self._lookups().matching(labels)
        if fitting is not None:
            return fitting
        found = self.find_target(labels.get("target", ""))
        return None if found is None else found[0]

    def cluster_for_namespace(self, namespace: str) -> ClusterSettings | None:
        """The client whose control plane runs in `namespace` (of the control plane cluster), else the client
        proxying to the target whose control plane does; the first listed of several."""
        index = self._lookups()
        return index.by_client_namespace.get(namespace) or index.by_target_namespace.get(namespace)

    def escalation_for(self, cluster_name: str | None) -> EscalationSettings:
        """The escalation of a cluster's alerts: its own keys over the top level's (None: the top level)."""
        cluster = None if cluster_name is None else self.cluster(cluster_name)
        return self.escalation if cluster is None else cluster.escalation.over(self.escalation)

    def alert_channel(self, cluster: ClusterSettings) -> str | None:
        return cluster.channel or self.slack.default_channel

    def digest_channel(self) -> str | None:
        return self.digest.channel or self.slack.default_channel

    def target_count(self) -> int:
        return sum(len(cluster.targets) for cluster in self.clusters)

    def may_query(self, cluster_name: str, who: Requester) -> bool:
        """Whether `who` may read state or run checks against the named cluster from where they ask."""
        access = self.access
        if who.direct_message:
            dms = access.direct_messages
            return who.user in dms.users and _covers(dms.clusters, cluster_name)
        refs = who.channel_refs()
        cluster = self.cluster(cluster_name)
        if access.alert_channels_may_query and cluster is not None and self.alert_channel(cluster) in refs:
            return True
        grants = (grant for grant in access.channels if grant.channel in refs)
        return any(_covers(grant.clusters, cluster_name) for grant in grants)

    def may_silence(self, cluster_name: str, who: Requester) -> bool:
        return who.user in self.access.silencers and self.may_query(cluster_name, who)


@dataclass(frozen=True)
class _FleetIndex:
    """Lookups over one fleet, so matching an alert to its client stays a lookup as the fleet grows."""

    clusters: tuple[ClusterSettings, ...]
    by_name: dict[str, ClusterSettings]
    by_target: dict[str, list[tuple[ClusterSettings, TargetSettings]]]  # every client of each target
    # match keys (sorted) -> their values -> the clusters matching exactly those, in listed order
    by_match: dict[tuple[str, ...], dict[tuple[str, ...], list[tuple[int, ClusterSettings]]]]
    by_client_namespace: dict[str, ClusterSettings]
    by_target_namespace: dict[str, ClusterSettings]

    @classmethod
    def of(cls, clusters: tuple[ClusterSettings, ...]) -> _FleetIndex:
        by_target: dict[str, list[tuple[ClusterSettings, TargetSettings]]] = {}
        by_match: dict[tuple[str, ...], dict[tuple[str, ...], list[tuple[int, ClusterSettings]]]] = {}
        by_client_namespace: dict[str, ClusterSettings] = {}
        by_target_namespace: dict[str, ClusterSettings] = {}
        for position, cluster in enumerate(clusters):
            keys = tuple(sorted(cluster.match))
            values = tuple(cluster.match[key] for key in keys)
            by_match.setdefault(keys, {}).setdefault(values, []).append((position, cluster))
            by_client_namespace.setdefault(cluster.control_plane_namespace, cluster)
            for target in cluster.targets:
                by_target.setdefault(target.name, []).append((cluster, target))
                by_target_namespace.setdefault(target.control_plane_namespace, cluster)
        by_name: dict[str, ClusterSettings] = {}
        for cluster in clusters:
            by_name.setdefault(cluster.name, cluster)
        return cls(clusters, by_name, by_target, by_match, by_client_namespace, by_target_namespace)

    def matching(self, labels: Mapping[str, str]) -> ClusterSettings | None:
        """The cluster whose `match` fits the labels: the most specific, then the first listed."""
        best: tuple[int, int, ClusterSettings] | None = None
        for keys, by_values in self.by_match.items():
            if any(key not in labels for key in keys):
                continue
            for position, cluster in by_values.get(tuple(labels[key] for key in keys), ()):
                if best is None or (-len(keys), position) < (-best[0], best[1]):
                    best = (len(keys), position, cluster)
        return None if best is None else best[2]


def _duplicate_names(clusters: tuple[ClusterSettings, ...]) -> list[tuple[Loc, str]]:
    """Clusters named twice, and a target listed twice by one cluster. Several clients may forward to one
    target (each with its own entry): the platform's fleet does, and the blast radius reads them all."""
    problems: list[tuple[Loc, str]] = []
    seen_clusters: dict[str, int] = {}
    for index, cluster in enumerate(clusters):
        if cluster.name in seen_clusters:
            first = seen_clusters[cluster.name]
            problems.append((("clusters", index, "name"), f"{cluster.name!r} is already clusters[{first}]"))
        seen_clusters.setdefault(cluster.name, index)
        seen_targets: dict[str, int] = {}
        for t_index, target in enumerate(cluster.targets):
            where = ("clusters", index, "targets", t_index, "name")
            if target.name in seen_targets:
                message = f"target {target.name!r} is already targets[{seen_targets[target.name]}]"
                problems.append((where, message))
            seen_targets.setdefault(target.name, t_index)
    return problems


def _unrouted_channels(settings: Settings) -> list[tuple[Loc, str]]:
    # Alerts that match no configured cluster are still posted, never dropped: they need somewhere to go.
    if settings.slack.default_channel is not None:
        return []
    return [(("slack", "default_channel"), "required: alerts that match no cluster are posted there")]


def _unknown_cluster_refs(settings: Settings) -> list[tuple[Loc, str]]:
    granted = [grant.channel for grant in settings.access.channels]
    problems: list[tuple[Loc, str]] = [
        (("access", "channels", index, "channel"), f"{channel!r} already has a grant above; merge them")
        for index, channel in enumerate(granted)
        if channel in granted[:index]
    ]
    if settings.platform is not None:  # the discovered clients are known once the platform is read
        return problems
    known = {cluster.name for cluster in settings.clusters} | {ALL_CLUSTERS}
    lists: list[tuple[Loc, tuple[str, ...]]] = [
        (("access", "channels", index, "clusters"), grant.clusters)
        for index, grant in enumerate(settings.access.channels)
    ]
    lists.append((("access", "direct_messages", "clusters"), settings.access.direct_messages.clusters))
    unknown = [
        ((*loc, position), f"{name!r} is not a configured cluster (known: {', '.join(sorted(known))})")
        for loc, names in lists
        for position, name in enumerate(names)
        if name not in known
    ]
    return unknown + problems
