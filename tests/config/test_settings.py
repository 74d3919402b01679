from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from config import validation
from config.settings import Requester, Settings
from tests.fakes.config_data import PROBE, cluster, config, locations, problems, target


def test_a_minimal_config_gets_the_documented_defaults() -> None:
    settings = Settings.model_validate(config())
    assert (settings.server.host, settings.server.port) == ("127.0.0.1", 8080)
    assert settings.enrichment.timeout_seconds == 5
    assert settings.slack.api_url == "https://slack.com/api/"
    assert settings.store.url.get_secret_value() == "sqlite:///proxybot.db"
    assert settings.digest.cron == "0 8 * * 1-5"
    assert settings.slack.bot_token is None
    assert settings.access.channels == ()


def test_the_slack_api_url_always_ends_with_a_slash() -> None:
    settings = Settings.model_validate(
        config(slack={"default_channel": "#a", "api_url": "http://127.0.0.1:9/api"})
    )
    assert settings.slack.api_url == "http://127.0.0.1:9/api/"


@pytest.mark.parametrize("url", ["ftp://x/", "slack.com/api", "http://", "not a url"])
def test_urls_must_be_http_with_a_host(url: str) -> None:
    assert locations(config(prometheus={"url": url})) == {("prometheus", "url")}


@pytest.mark.parametrize("name", ["payments/ledger", "p/x", "a1/b-2", f"{'a' * 63}/{'b' * 63}"])
def test_valid_target_names(name: str) -> None:
    Settings.model_validate(config(clusters=[cluster(targets=[target(name)])]))


@pytest.mark.parametrize(
    "name",
    [
        "ledger",
        "Payments/ledger",
        "payments/Ledger",
        "a/b/c",
        "a/",
        "/b",
        "a_b/c",
        "-a/b",
        "a/b-",
        "../x",
        "%2e/x",
        f"{'a' * 64}/b",
        "a /b",
        "",
    ],
)
def test_invalid_target_names(name: str) -> None:
    data = config(clusters=[cluster(targets=[target(name)])])
    assert locations(data) == {("clusters", 0, "targets", 0, "name")}


@pytest.mark.parametrize("gv", ["example.com/v1", "a.b.c/v1beta1", "x-y.example.io/v2alpha3"])
def test_valid_group_versions(gv: str) -> None:
    probe = {"group_version": gv, "resource": "things"}
    Settings.model_validate(config(clusters=[cluster(targets=[target(group_versions=[gv], probe=probe)])]))


@pytest.mark.parametrize(
    "gv",
    [
        "v1",
        "apps/v1",
        "example.com/V1",
        "example.com/1v",
        "Example.com/v1",
        "example.com/v1/x",
        "/v1",
        "example.com/",
        "example..com/v1",
        "example.com/v_1",
        "-example.com/v1",
        "example.com/%2e",
    ],
)
def test_invalid_group_versions(gv: str) -> None:
    data = config(clusters=[cluster(targets=[target(group_versions=["ok.example.com/v1", gv])])])
    assert ("clusters", 0, "targets", 0, "group_versions", 1) in locations(data)


@pytest.mark.parametrize("value", ["../secrets", "Foo", "a/b", "%2e", "", "-a", "a.b", "a" * 64, "a b"])
@pytest.mark.parametrize("field", ["resource", "namespace"])
def test_probe_path_parts_cannot_escape_the_probe_path(field: str, value: str) -> None:
    probe = {
        "group_version": "ledger.example.com/v1",
        "resource": "accounts",
        "namespace": "default",
        field: value,
    }
    data = config(clusters=[cluster(targets=[target(probe=probe)])])
    assert locations(data) == {(*PROBE, field)}


def test_a_resource_must_start_with_a_letter_but_a_namespace_may_not() -> None:
    probe = {"group_version": "ledger.example.com/v1", "resource": "1things", "namespace": "1team"}
    assert locations(config(clusters=[cluster(targets=[target(probe=probe)])])) == {(*PROBE, "resource")}


def test_the_probe_group_version_must_be_proxied_by_the_target() -> None:
    probe = {"group_version": "other.example.com/v1", "resource": "accounts"}
    found = problems(config(clusters=[cluster(targets=[target(probe=probe)])]))
    assert [loc for loc, _ in found] == [(*PROBE, "group_version")]
    assert "not one of this target's group_versions" in found[0][1]


def test_access_resources_defaults_to_owned_and_takes_only_owned_or_all() -> None:
    settings = Settings.model_validate(config())
    assert settings.clusters[0].targets[0].access_resources == "owned"
    chosen = config(clusters=[cluster(targets=[target(access_resources="all")])])
    assert Settings.model_validate(chosen).clusters[0].targets[0].access_resources == "all"
    wrong = config(clusters=[cluster(targets=[target(access_resources="mine")])])
    assert locations(wrong) == {("clusters", 0, "targets", 0, "access_resources")}


def test_a_group_version_listed_twice_is_refused() -> None:
    gvs = ["ledger.example.com/v1", "ledger.example.com/v1"]
    data = config(clusters=[cluster(targets=[target(group_versions=gvs)])])
    assert locations(data) == {("clusters", 0, "targets", 0, "group_versions", 1)}


def test_duplicate_cluster_names_and_a_target_listed_twice_by_one_cluster_are_refused() -> None:
    first = cluster("prod", targets=[target("p/a")])
    second = cluster(
        "prod", match={"cluster": "other"}, targets=[target("p/a"), target("p/b"), target("p/b")]
    )
    found = problems(config(clusters=[first, second]))
    assert {loc for loc, _ in found} == {("clusters", 1, "name"), ("clusters", 1, "targets", 2, "name")}
    assert any("already clusters[0]" in message for _, message in found)
    assert any("'p/b' is already targets[1]" in message for _, message in found)


def test_several_clients_may_forward_to_one_target_and_each_is_its_forwarder() -> None:
    a = cluster("team-a", match={"cluster": "team-a"}, targets=[target("p/shared"), target("p/own")])
    b = cluster("team-b", match={"cluster": "team-b"}, targets=[target("p/shared")])
    settings = Settings.model_validate(config(clusters=[a, b]))
    assert [c.name for c, _ in settings.forwarders("p/shared")] == ["team-a", "team-b"]
    assert [c.name for c, _ in settings.forwarders("p/own")] == ["team-a"]
    assert settings.forwarders("p/none") == ()
    assert settings.find_target("p/shared")[0].name == "team-a"  # type: ignore[index]
    # An alert with its client's labels is that client's; the target alone names the first listed.
    assert settings.cluster_for_alert({"cluster": "team-b", "target": "p/shared"}).name == "team-b"  # type: ignore[union-attr]
    assert settings.cluster_for_alert({"target": "p/shared"}).name == "team-a"  # type: ignore[union-attr]


@pytest.mark.parametrize("match", [{}, {"bad-label": "x"}, {"0x": "y"}])
def test_match_needs_valid_prometheus_label_names(match: dict[str, str]) -> None:
    assert locations(config(clusters=[cluster(match=match)]))


def test_the_most_specific_match_wins_then_the_first_listed() -> None:
    wide = cluster("wide", match={"env": "prod"}, targets=[target("p/a")])
    narrow = cluster("narrow", match={"env": "prod", "cluster": "eu"}, targets=[target("p/b")])
    settings = Settings.model_validate(config(clusters=[wide, narrow]))
    assert settings.cluster_for_alert({"env": "prod", "cluster": "eu", "x": "y"}).name == "narrow"  # type: ignore[union-attr]
    assert settings.cluster_for_alert({"env": "prod", "cluster": "us"}).name == "wide"  # type: ignore[union-attr]
    assert settings.cluster_for_alert({"env": "dev"}) is None


def test_an_alert_without_match_labels_maps_by_its_target() -> None:
    # The guide's DiscoveryDegraded sums by (target, group_version): no scrape labels survive.
    a = cluster("a", match={"cluster": "a"}, targets=[target("p/a")])
    b = cluster("b", match={"cluster": "b"}, targets=[target("p/b")])
    settings = Settings.model_validate(config(clusters=[a, b]))
    assert settings.cluster_for_alert({"target": "p/b", "group_version": "x.io/v1"}).name == "b"  # type: ignore[union-attr]
    assert settings.cluster_for_alert({"target": "p/unknown"}) is None


def test_an_alert_on_a_control_plane_object_maps_by_its_namespace() -> None:
    # The guide's ProbeFailing carries kube-state-metrics' labels only: namespace and cronjob.
    plane = {"kubeconfig": "/kc", "namespace": "cp-b"}
    a = cluster("a", targets=[target("p/ledger", control_plane={"kubeconfig": "/kc", "namespace": "cp-l"})])
    b = cluster("b", control_plane=plane, targets=[target("p/queue")])
    settings = Settings.model_validate(config(clusters=[a, b]))
    probe = {"cronjob": "proxy-probe"}
    assert settings.cluster_for_alert({**probe, "namespace": "vcluster-a"}).name == "a"  # type: ignore[union-attr]
    assert settings.cluster_for_alert({**probe, "namespace": "cp-b"}).name == "b"  # type: ignore[union-attr]
    # A target's control plane is the client's that proxies to it.
    assert settings.cluster_for_alert({**probe, "namespace": "cp-l"}).name == "a"  # type: ignore[union-attr]
    # The namespace says more than a `match` that the control plane's scrape happens to fit.
    assert settings.cluster_for_alert({**probe, "namespace": "cp-b", "cluster": "a"}).name == "b"  # type: ignore[union-attr]
    assert settings.cluster_for_alert({**probe, "namespace": "vcluster-b"}) is None  # b's is cp-b
    assert settings.cluster_for_alert({"namespace": "vcluster-a"}) is None  # not a control-plane object


def test_control_plane_namespaces_default_to_vclusters_convention() -> None:
    configured = {"kubeconfig": "/kc", "namespace": "cp-ledger"}
    data = config(clusters=[cluster(targets=[target(control_plane=configured)])])
    settings = Settings.model_validate(data)
    prod = settings.clusters[0]
    assert prod.control_plane_namespace == "vcluster-prod"
    assert prod.targets[0].control_plane_namespace == "cp-ledger"
    moved = config(clusters=[cluster(control_plane={"kubeconfig": "/kc", "namespace": "cp-prod"})])
    assert Settings.model_validate(moved).clusters[0].control_plane_namespace == "cp-prod"
    plain = Settings.model_validate(config()).clusters[0].targets[0]
    assert plain.control_plane_namespace == "vcluster-ledger"


def test_targets_are_found_across_the_fleet() -> None:
    settings = Settings.model_validate(config(clusters=[cluster("a"), cluster("b")]))
    found = settings.find_target("b/ledger")
    assert found is not None
    assert (found[0].name, found[1].probe.path) == (
        "b",
        "/apis/ledger.example.com/v1/namespaces/default/accounts",
    )
    assert settings.find_target("c/ledger") is None
    assert settings.target_count() == 2


def test_relative_paths_resolve_against_the_base_dir_from_the_context(tmp_path: Path) -> None:
    direct = {"kubeconfig": "../target.kubeconfig"}
    data = config(clusters=[cluster(kubeconfig="kube/prod.yaml", targets=[target("p/a", direct=direct)])])
    data["clusters"].append(cluster("abs", kubeconfig="/etc/abs.yaml", match={"c": "abs"}))
    settings = Settings.model_validate(data, context={"base_dir": tmp_path})
    assert settings.clusters[0].kubeconfig == tmp_path / "kube/prod.yaml"
    assert settings.clusters[0].targets[0].direct.kubeconfig == tmp_path / "../target.kubeconfig"  # type: ignore[union-attr]
    assert settings.clusters[1].kubeconfig == Path("/etc/abs.yaml")
    assert settings.store.sqlite_path == tmp_path / "proxybot.db"


def test_a_default_channel_is_required_for_alerts_matching_no_cluster() -> None:
    # Even when every cluster names its channel: an alert matching none is posted, never dropped.
    clusters = [cluster(channel="C0123ABCE"), cluster("b", channel="C0123ABCD", match={"c": "b"})]
    data = config(slack={}, clusters=clusters, digest={"enabled": False})
    assert locations(data) == {("slack", "default_channel")}
    data["slack"] = {"default_channel": "#alerts"}
    assert Settings.model_validate(data).slack.default_channel == "#alerts"


@pytest.mark.parametrize("channel", ["ops", "#Ops", "#a b", "c0123abcd", "X0123ABCD"])
def test_channels_are_ids_or_hash_names(channel: str) -> None:
    assert locations(config(slack={"default_channel": channel})) == {("slack", "default_channel")}


def test_secrets_are_hidden_from_repr_and_blank_optional_secrets_mean_unset() -> None:
    slack = {"default_channel": "#a", "bot_token": "xoxb-real-token-1234", "app_token": "  "}
    settings = Settings.model_validate(config(slack=slack))
    assert "xoxb-real-token-1234" not in repr(settings)
    assert "xoxb-real-token-1234" not in settings.model_dump_json()
    assert settings.slack.app_token is None


@pytest.mark.parametrize(("key", "value"), [("bot_token", "xapp-1-abc"), ("app_token", "xoxb-123")])
def test_slack_tokens_must_be_of_their_kind_without_echoing_them(key: str, value: str) -> None:
    found = problems(config(slack={"default_channel": "#a", key: value}))
    assert [loc for loc, _ in found] == [("slack", key)]
    assert value not in found[0][1]


def test_webhook_auth_is_a_token_or_a_complete_basic_auth_pair() -> None:
    assert locations(config(alertmanager={"webhook_username": "am"})) == {
        ("alertmanager", "webhook_password")
    }
    both = {"webhook_token": "t", "webhook_username": "am", "webhook_password": "p"}
    assert locations(config(alertmanager=both)) == {("alertmanager", "webhook_token")}
    Settings.model_validate(config(alertmanager={"webhook_username": "am", "webhook_password": "p"}))


def test_store_urls_are_sqlite_or_postgres_and_never_echoed() -> None:
    found = problems(config(store={"url": "mysql://u:hunter2@db/x"}))
    assert [loc for loc, _ in found] == [("store", "url")]
    assert "hunter2" not in found[0][1]
    pg = Settings.model_validate(config(store={"url": "postgresql://u:pw@db/x"}))
    assert pg.store.sqlite_path is None
    memory = Settings.model_validate(config(store={"url": "sqlite:///:memory:"}))
    assert memory.store.sqlite_path is None


@pytest.mark.parametrize(
    ("url", "names"),
    [
        ("postgresql://bot:hunter2@/proxybot", "no host"),
        ("postgresql://bot:hunter2@db", "no database"),
        ("postgresql://bot:hunter2@db/", "no database"),
        ("postgresql://bot:hunter2@db/a/b", "no database"),
        ("postgresql://:hunter2@db/proxybot", "no user"),
        ("postgresql://bot:hunter2@db:port/proxybot", "port is not a number"),
        ("postgresql://bot:hun%zzter2@db/proxybot", "percent-encode"),
        ("postgresql://bot:hun@ter2@db/proxybot", "percent-encode"),
        ("postgresql://bot:hun ter2@db/proxybot", "percent-encode"),
    ],
)
def test_a_postgresql_url_names_its_missing_part_never_the_password(url: str, names: str) -> None:
    [(loc, message)] = problems(config(store={"url": url}))
    assert loc == ("store", "url")
    assert names in message
    assert "hunter2" not in message


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://bot:pw@db.internal:5432/proxybot?sslmode=require",
        "postgres://bot@10.0.0.7/proxybot",
        "postgresql://bot:p%40ss@[::1]:5433/proxybot",
    ],
)
def test_libpq_urls_are_accepted(url: str) -> None:
    assert Settings.model_validate(config(store={"url": url})).store.url.get_secret_value() == url


@pytest.mark.parametrize("cron", ["* * *", "61 * * * *", "0 8 * * 8", "0 8 1 * 1", "@daily", "0 25 * * *"])
def test_invalid_crontabs_are_refused(cron: str) -> None:
    assert locations(config(digest={"cron": cron})) == {("digest", "cron")}


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../etc/passwd", ""])
def test_unknown_time_zones_are_refused(zone: str) -> None:
    assert locations(config(digest={"timezone": zone})) == {("digest", "timezone")}


@pytest.mark.parametrize(
    ("field", "names"),
    [
        ("1-5", "mon,tue,wed,thu,fri"),
        ("0", "sun"),
        ("7", "sun"),
        ("5-7", "sun,fri,sat"),
        ("*/2", "sun,tue,thu,sat"),
        ("mon-fri", "mon,tue,wed,thu,fri"),
        ("SAT,sun", "sun,sat"),
        ("1-5/2", "mon,wed,fri"),
        ("*", "*"),
    ],
)
def test_cron_weekdays_keep_their_cron_meaning(field: str, names: str) -> None:
    assert validation.cron_weekdays_as_names(field) == names


def test_the_digest_trigger_fires_on_the_next_weekday_in_its_time_zone() -> None:
    settings = Settings.model_validate(config(digest={"cron": "0 8 * * 1-5", "timezone": "Europe/Berlin"}))
    saturday = datetime(2025, 1, 4, 12, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    fire = settings.digest.cron_trigger().get_next_fire_time(None, saturday)
    assert fire == datetime(2025, 1, 6, 8, 0, tzinfo=ZoneInfo("Europe/Berlin"))


def access_config(**access: Any) -> Settings:
    clusters = [cluster("prod", channel="#prod-alerts"), cluster("dev", match={"cluster": "dev"})]
    return Settings.model_validate(config(clusters=clusters, access=access))


def in_channel(name: str, user: str = "U0000USER") -> Requester:
    return Requester(user=user, channel_id="C0000CHAN", channel_name=name.removeprefix("#"))


def test_channels_query_only_the_clusters_granted_to_them() -> None:
    settings = access_config(
        channels=[{"channel": "#team", "clusters": ["dev"]}, {"channel": "#ops", "clusters": ["*"]}]
    )
    assert settings.may_query("dev", in_channel("#team"))
    assert not settings.may_query("prod", in_channel("#team"))
    assert settings.may_query("prod", in_channel("#ops"))
    assert not settings.may_query("prod", in_channel("#random"))


def test_a_grant_by_channel_id_matches_the_id() -> None:
    settings = access_config(channels=[{"channel": "C0000CHAN", "clusters": ["prod"]}])
    assert settings.may_query("prod", in_channel("#renamed"))


def test_the_alert_channel_of_a_cluster_may_query_it_unless_turned_off() -> None:
    assert access_config().may_query("prod", in_channel("#prod-alerts"))
    assert access_config().may_query("dev", in_channel("#alerts"))  # the default channel carries dev's alerts
    assert not access_config().may_query("dev", in_channel("#prod-alerts"))
    assert not access_config(alert_channels_may_query=False).may_query("prod", in_channel("#prod-alerts"))


def test_direct_messages_are_refused_unless_the_user_is_listed() -> None:
    dm = Requester(user="U0000ADMIN", channel_id="D0000DM", direct_message=True)
    assert not access_config().may_query("prod", dm)
    settings = access_config(direct_messages={"users": ["U0000ADMIN"], "clusters": ["dev"]})
    assert settings.may_query("dev", dm)
    assert not settings.may_query("prod", dm)
    assert not settings.may_query(
        "dev", Requester(user="U0000OTHER", channel_id="D0000DM", direct_message=True)
    )


def test_silencing_needs_the_user_listed_and_query_rights_where_they_ask() -> None:
    settings = access_config(silencers=["U0000ONCALL"], channels=[{"channel": "#ops", "clusters": ["dev"]}])
    assert settings.may_silence("dev", in_channel("#ops", "U0000ONCALL"))
    assert not settings.may_silence("prod", in_channel("#ops", "U0000ONCALL"))
    assert not settings.may_silence("dev", in_channel("#ops", "U0000OTHER"))


def test_access_rules_must_name_configured_clusters_and_users() -> None:
    access = {
        "channels": [
            {"channel": "#ops", "clusters": ["prod", "nope"]},
            {"channel": "#ops", "clusters": ["*"]},
        ],
        "direct_messages": {"users": ["U0000ADMIN"], "clusters": ["gone"]},
    }
    assert locations(config(access=access)) == {
        ("access", "channels", 0, "clusters", 1),
        ("access", "channels", 1, "channel"),
        ("access", "direct_messages", "clusters", 0),
    }
    assert locations(config(access={"silencers": ["alice"]})) == {("access", "silencers", 0)}


def test_the_longest_silence_is_a_duration_defaulting_to_seven_days() -> None:
    assert Settings.model_validate(config()).access.silence_max == 7 * 86400
    assert Settings.model_validate(config(access={"silence_max": "12h"})).access.silence_max == 12 * 3600
    assert Settings.model_validate(config(access={"silence_max": 90})).access.silence_max == 90
    for bad in ("forever", "0s", "1w", True, -5):
        assert locations(config(access={"silence_max": bad})) == {("access", "silence_max")}, bad


@pytest.mark.parametrize(
    ("field", "value"), [("port", 0), ("port", 65536), ("port", "http"), ("log_level", "verbose")]
)
def test_server_port_range_and_log_level(field: str, value: Any) -> None:
    assert locations(config(server={field: value})) == {("server", field)}


def test_the_log_level_is_info_unless_set() -> None:
    assert Settings.model_validate(config()).server.log_level == "info"
    assert Settings.model_validate(config(server={"log_level": "debug"})).server.log_level == "debug"


@pytest.mark.parametrize("timeout", [0, -1, 61])
def test_enrichment_timeout_range(timeout: float) -> None:
    assert locations(config(enrichment={"timeout_seconds": timeout})) == {("enrichment", "timeout_seconds")}


@pytest.mark.parametrize(
    "value",
    [
        *("", "  ", "changeme", "CHANGEME", "xoxb-...", "xapp-…", "<signing-secret>", "TODO"),
        # config/deploy/README.md and secret.template.yaml
        *("xoxb-your-token", "your-signing-secret", "xapp-your-token"),
        "postgresql://proxybot:PASSWORD@HOST:5432/proxybot?sslmode=require",
        "postgresql://proxybot:<password>@db.example.internal:5432/proxybot?sslmode=require",
    ],
)
def test_placeholder_secrets_are_recognised(value: str) -> None:
    assert validation.is_placeholder_secret(value)


@pytest.mark.parametrize(
    "value",
    [
        *("xoxb-1234-5678-abcdef", "8f0c1d2e3b", "change-me-not-really-a-placeholder", "xoxb-12-34-Yourabc"),
        "postgresql://proxybot:s3cret@db.example.internal:5432/proxybot",
        "sqlite:////home/your-name/proxybot.db",
    ],
)
def test_real_looking_secrets_are_not_placeholders(value: str) -> None:
    assert not validation.is_placeholder_secret(value)


@pytest.mark.parametrize("section", ["prometheus", "alertmanager"])
def test_client_credentials_are_one_scheme_and_need_a_url(section: str) -> None:
    both = {
        "url": "https://x:1",
        "bearer_token_file": "/t",
        "basic_auth": {"username": "u", "password_file": "/p"},
    }
    assert problems(config(**{section: both})) == [
        ((section, "basic_auth"), "set bearer_token_file or basic_auth, not both")
    ]
    nothing_to_call = {"bearer_token_file": "/t", "ca_file": "/ca.pem"}
    without_url = "means nothing without url (it says how the bot calls that URL)"
    assert problems(config(**{section: nothing_to_call})) == [
        ((section, "bearer_token_file"), without_url),
        ((section, "ca_file"), without_url),
    ]
    assert locations(
        config(**{section: {"url": "https://x:1", "basic_auth": {"username": "", "password_file": "/p"}}})
    ) == {(section, "basic_auth", "username")}


def test_escalation_is_off_by_default_after_ten_minutes_for_critical_alerts() -> None:
    escalation = Settings.model_validate(config()).escalation
    assert (escalation.after, escalation.mention, escalation.severities) == (600, "", ("critical",))
    assert not escalation.enabled


@pytest.mark.parametrize("mention", ["<!subteam^S0123ONCALL>", "<@U0123ABCDE>", "<@W0123ABCDE>", ""])
def test_escalation_mentions_a_user_group_or_a_user(mention: str) -> None:
    settings = Settings.model_validate(config(escalation={"mention": mention, "after": "2s"}))
    assert (settings.escalation.mention, settings.escalation.after) == (mention, 2)
    assert settings.escalation.enabled is bool(mention)


@pytest.mark.parametrize(
    "mention",
    ["@oncall", "S0123ONCALL", "<!subteam^S0123ONCALL", "<@u0123abcde>", "<!channel>", "<#C0123ABC>"],
)
def test_an_escalation_mention_of_another_form_is_refused_naming_the_field(mention: str) -> None:
    [(loc, message)] = problems(config(escalation={"mention": mention}))
    assert loc == ("escalation", "mention")
    assert "<!subteam^S0123ONCALL>" in message
    assert "<@U0123ABCDE>" in message


@pytest.mark.parametrize("after", ["0s", 0, -5, "soon", True])
def test_escalation_after_must_be_a_positive_duration(after: Any) -> None:
    assert locations(config(escalation={"after": after})) == {("escalation", "after")}
    assert locations(config(clusters=[cluster(escalation={"after": after})])) == {
        ("clusters", 0, "escalation", "after")
    }


def test_a_clusters_escalation_overrides_the_top_levels_key_by_key() -> None:
    settings = Settings.model_validate(
        config(
            escalation={"after": "10m", "mention": "<!subteam^S0123ONCALL>"},
            clusters=[
                cluster(
                    "prod", escalation={"mention": "<@U0PRODLEAD>", "severities": ["critical", "warning"]}
                ),
                cluster("staging", match={"cluster": "staging"}, targets=[target("staging/ledger")]),
            ],
        )
    )
    prod, staging = settings.escalation_for("prod"), settings.escalation_for("staging")
    assert (prod.after, prod.mention, prod.severities) == (600, "<@U0PRODLEAD>", ("critical", "warning"))
    assert staging == settings.escalation == settings.escalation_for(None)
    assert locations(config(clusters=[cluster(escalation={"mention": "oncall"})])) == {
        ("clusters", 0, "escalation", "mention")
    }
    assert locations(config(escalation={"page": "<@U0123ABCDE>"})) == {("escalation", "page")}


def test_alertmanager_is_polled_at_most_a_minute_apart() -> None:
    assert Settings.model_validate(config()).alertmanager.poll_interval == 15.0
    fast = Settings.model_validate(config(alertmanager={"poll_interval": "2s"}))
    assert fast.alertmanager.poll_interval == 2.0
    assert locations(config(alertmanager={"poll_interval": "5m"})) == {("alertmanager", "poll_interval")}
    assert locations(config(alertmanager={"poll_interval": "0s"})) == {("alertmanager", "poll_interval")}


def test_ties_go_to_the_first_listed_and_a_new_fleet_is_looked_up_anew() -> None:
    first = cluster("first", match={"env": "prod"}, targets=[target("p/a")])
    second = cluster("second", match={"env": "prod"}, targets=[target("p/b")])
    settings = Settings.model_validate(config(clusters=[first, second]))
    assert settings.cluster_for_alert({"env": "prod"}).name == "first"  # type: ignore[union-attr]
    assert settings.find_target("p/c") is None  # the lookups are built now, over this fleet
    third = cluster("third", match={"env": "dev"}, targets=[target("p/c")])
    grown = settings.with_fleet(
        (*settings.clusters, *Settings.model_validate(config(clusters=[third])).clusters)
    )
    assert grown.find_target("p/c") is not None
    assert grown.cluster_for_alert({"env": "dev"}).name == "third"  # type: ignore[union-attr]
    assert settings.find_target("p/c") is None  # the first fleet's own lookups are its own


def test_a_resolve_is_verified_after_five_minutes_unless_turned_off() -> None:
    assert Settings.model_validate(config()).resolution.verify_after == 300
    for given, seconds in (("2s", 2), ("10m", 600), (90, 90), (0, 0), ("0", 0), ("0s", 0)):
        settings = Settings.model_validate(config(resolution={"verify_after": given}))
        assert settings.resolution.verify_after == seconds, given


@pytest.mark.parametrize("bad", [-1, "soon", True, "2d", "5 m"])
def test_a_verify_after_that_is_no_duration_is_refused_naming_the_field(bad: object) -> None:
    [(loc, message)] = problems(config(resolution={"verify_after": bad}))
    assert loc == ("resolution", "verify_after")
    assert message
