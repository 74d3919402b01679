"""Simulated client/target tenant clusters speaking the Kubernetes HTTP API (demo, tests, benchmarks).

Model (pure, fake-clock driven): `sim.world.World`, `sim.proxy.ReplicaProxy`, `sim.peers.PeerCache`;
scenarios in `sim.scenarios.SCENARIOS` / `build_world(name, seed=...)`.

Server: `with sim.server.SimServer(scenario="healthy", speed=1.0) as srv:` serves over HTTPS
(CA at `srv.ca_path`) on one port, `srv.base_url` = `https://127.0.0.1:PORT`:

- `{base}/clusters/team-a`                 client tenant cluster (replicas load-balanced round robin)
- `{base}/clusters/team-a/pods/team-a-0`    one client replica pinned (scrape each with its `pod` label)
- `{base}/clusters/crd-store`              target tenant cluster's own API (direct requests)
- `{base}/clusters/control-plane`          control plane cluster: proxy-probe CronJobs, NetworkPolicies
- `{base}/kube-state-metrics/metrics`      `kube_cronjob_created`, `kube_cronjob_status_last_successful_time`,
                                           `..._last_schedule_time` (unix times: t=0 is server start, and
                                           simulated seconds are divided by `speed`)

Prometheus scrapes `{cluster url}/metrics/syncer` (e.g. `.../clusters/team-a/pods/team-a-0/metrics/syncer`)
with `Authorization: Bearer {srv.token}`. Every path needs a valid bearer token (401 otherwise);
`srv.limited_token` (and `srv.token_for(name, metrics=False)`) gets 403 on `/metrics/syncer`.
`srv.token_for(name[, pod])` is bound to one cluster, so unprefixed paths (`kubectl get --raw`) reach it.
`srv.write_config(path)` writes the proxybot config plus `<stem>.kubeconfigs/<cluster>.yaml`.
"""
