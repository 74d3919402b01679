"""What a real Prometheus scrapes in tests: the simulator's client replicas, as a pod-level scrape would."""

from __future__ import annotations

from sim.defaults import CLIENT
from sim.server import METRICS_PATH, SimServer
from tests.harness.prometheus import ScrapeJob


def syncer_jobs(sim: SimServer) -> list[ScrapeJob]:
    """One scrape job per client replica, labelled with its pod and cluster, as a pod-level scrape would."""
    address = f"{sim.host}:{sim.port}"
    return [
        ScrapeJob(
            f"syncer-{pod}",
            address,
            f"/clusters/{CLIENT}/pods/{pod}{METRICS_PATH}",
            "https",
            sim.token,
            sim.ca_path,
            labels={"pod": pod, "cluster": CLIENT},
        )
        for pod in sim.pods(CLIENT)
    ]
