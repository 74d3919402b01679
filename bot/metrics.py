"""The bot's own metrics, served on `GET /metrics`: one registry per app, no process globals."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest

from bot.domain.fleet import FleetHealth

RSS = "process_resident_memory_bytes"


class BotMetrics:
    """Counters and gauges about proxybot itself (not the proxy it watches)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # The process's own RSS, CPU, open file descriptors and start time, read from /proc at each scrape
        # (the standard `process_*` names; the default registry has them, ours must ask).
        ProcessCollector(registry=self.registry)
        self.alerts_accepted = Counter(
            "proxybot_notifications_accepted",
            "Alertmanager notifications accepted, by whether they repeated an earlier one.",
            ["duplicate"],
            registry=self.registry,
        )
        self.notifications_refused = Counter(
            "proxybot_notifications_refused",
            "Alertmanager notifications refused, by HTTP status (4xx: the request; 503: the store failed, or "
            "the bot is stopping).",
            ["status"],
            registry=self.registry,
        )
        self.digest_runs = Counter(
            "proxybot_digest_runs",
            "Scheduled digests, by outcome: posted, skipped (already posted), failed.",
            ["outcome"],
            registry=self.registry,
        )
        self.escalations = Counter(
            "proxybot_escalations",
            "Escalation deadlines settled (on the leader), by outcome: sent (the on-call was mentioned),"
            " acknowledged, silenced, ended (the episode was over first).",
            ["outcome"],
            registry=self.registry,
        )
        self.verifications = Counter(
            "proxybot_verifications",
            "Verifications after resolve settled (on the leader), by outcome: verified (every probe answered"
            " again), unverified (one still fails), flapping (the group fired again first).",
            ["outcome"],
            registry=self.registry,
        )
        self.slack_calls = Counter(
            "proxybot_slack_calls",
            "Slack Web API calls, by method and outcome.",
            ["method", "outcome"],
            registry=self.registry,
        )
        self.slack_refusals = Counter(
            "proxybot_slack_refusals",
            "Slack Web API calls Slack refused (ok: false), by method and Slack's error code.",
            ["method", "error"],
            registry=self.registry,
        )
        self.enrichment_seconds = Histogram(
            "proxybot_enrichment_seconds",
            "Time of each real read of a cluster's live state (/metrics/syncer fetched and parsed; a read"
            " shared or served from the cache is not one).",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10),
            registry=self.registry,
        )
        self.enrichment_wait_seconds = Histogram(
            "proxybot_enrichment_wait_seconds",
            "Per notification, how long its enrichment waited for upstream reads, cut at the budget: by part"
            " (live: /metrics/syncer, pods: target control-plane pods, logs: control-plane logs, prometheus),"
            " and all (the whole wait; the parts run concurrently). Shared reads in hand cost 0.",
            ["part"],
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.outbox_depth = Gauge(
            "proxybot_outbox_depth", "Slack operations waiting to be delivered.", registry=self.registry
        )
        self.outbox_oldest_age = Gauge(
            "proxybot_outbox_oldest_pending_age_seconds",
            "How long the oldest Slack operation still waiting has waited (0 when none waits).",
            registry=self.registry,
        )
        self.command_seconds = Histogram(
            "proxybot_command_seconds",
            "Time from a slash command's arrival to its answer.",
            ["command"],
            registry=self.registry,
        )

    def follow_fleet(self, health: Callable[[], FleetHealth | None]) -> None:
        """Gauges of the platform the fleet is read from, read from `health` at each scrape: only when the
        fleet comes from a platform (`platform:`)."""
        up = Gauge(
            "proxybot_platform_up",
            "1 when the last reading of the vCluster Platform's fleet succeeded, 0 while it fails (the last"
            " fleet is kept).",
            registry=self.registry,
        )
        read = Gauge(
            "proxybot_fleet_read_timestamp_seconds",
            "Unix time of the fleet reading being served (a kept one when the platform failed at start).",
            registry=self.registry,
        )
        clients = Gauge(
            "proxybot_fleet_clients",
            "Client clusters of the fleet, by whether the bot reads them (`read`) or only lists them"
            " (`unread`: vCluster refuses their proxy section, or no target can be probed).",
            ["state"],
            registry=self.registry,
        )
        up.set_function(lambda: float((h := health()) is not None and h.up))
        read.set_function(lambda: (h.read_at or 0.0) if (h := health()) is not None else 0.0)
        clients.labels("read").set_function(lambda: float(h.clients) if (h := health()) is not None else 0.0)
        clients.labels("unread").set_function(lambda: float(h.unread) if (h := health()) is not None else 0.0)

    def rss_bytes(self) -> float | None:
        """The process's resident memory now, as `/metrics` shows it; None where /proc is not there."""
        return self.registry.get_sample_value(RSS)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
