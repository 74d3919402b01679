"""The operator's kit around the Deployment, each part checked against what it serves: the NetworkPolicy
against the addresses the config names, HTTP mode's Ingress against the Slack manifest, the scrape of each
client's /metrics/syncer (a ServiceMonitor, and a plain job run in a real Prometheus) against the cluster's
`match` labels, the guide's probe against `proxybot probe`, the PrometheusRules against the promtool-tested
rule files, and the guides' walk-through against the files it names."""

from __future__ import annotations

import copy
import os
import re
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import trustme
import yaml

from bot.domain.paths import probe_path
from bot.inbound.slack import EVENTS_PATH
from config.clusters import ClusterSettings
from config.environment import KNOWN
from config.settings import Settings
from tests.fakes.manifests import DEPLOY, K8S_VERSIONS, ROOT, Doc, kustomize, listed, shipped_settings
from tests.harness.prometheus import Prometheus

RULES = ROOT / "config" / "rules"
SCRAPE_CONFIGS = ROOT / "config" / "prometheus" / "scrape-configs.yaml"
VCLUSTER = ROOT / "config" / "vcluster" / "proxybot-client.yaml"
SLACK_MANIFEST = ROOT / "config" / "slack" / "manifest.yaml"
VARIANTS = ("sqlite", "postgres")
KIT = ("monitoring", "self-monitoring", "probe")
VC_KEYS = ("certificate-authority", "client-certificate", "client-key")
MONITORING = "monitoring"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return shipped_settings(tmp_path)


def built(directory: str) -> tuple[Doc, ...]:
    return kustomize(DEPLOY / directory)


def find(docs: Iterable[Doc], kind: str, name: str | None = None) -> list[Doc]:
    return [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]


def only(docs: list[Doc]) -> Doc:
    assert len(docs) == 1, f"expected one, found {len(docs)}: {[d['metadata'].get('name') for d in docs]}"
    return docs[0]


def file_docs(relative: str) -> list[Doc]:
    return [d for d in yaml.safe_load_all((DEPLOY / relative).read_text()) if d]


def release_of(cluster: ClusterSettings) -> str:
    plane = cluster.control_plane
    return plane.release if plane is not None and plane.release else cluster.name


def vcluster_values() -> Doc:
    values: Doc = yaml.safe_load(VCLUSTER.read_text())
    return values


# -- the kit builds ---------------------------------------------------------------------------------


@pytest.mark.parametrize("directory", KIT)
def test_each_kit_kustomization_builds_what_it_lists(directory: str) -> None:
    names = {(d["kind"], d["metadata"]["name"]) for d in built(directory)}
    assert names == listed(DEPLOY / directory)


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_http_mode_composes_with_each_variant(variant: str, version: str, tmp_path: Path) -> None:
    # As the guide says: the variant's kustomization names ../http-mode under `components`.
    shutil.copytree(DEPLOY, tmp_path / "deploy")
    overlay = tmp_path / "deploy" / variant
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["components"] = ["../http-mode"]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    docs = kustomize(overlay)
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert names == {(d["kind"], d["metadata"]["name"]) for d in built(variant)} | {
        ("Ingress", "proxybot-slack"),
        ("NetworkPolicy", "proxybot-slack-ingress"),
    }
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


# -- the PrometheusRules ------------------------------------------------------------------------------

PROMETHEUS_RULES = {
    "monitoring/resource-proxy-rules.yaml": ("proxy-alerts.yaml", "ResourceProxy"),
    "self-monitoring/prometheusrule.yaml": ("proxybot-alerts.yaml", "Proxybot"),
}


@pytest.mark.parametrize("relative", PROMETHEUS_RULES)
def test_prometheus_rule_has_the_operator_shape(relative: str) -> None:
    rule = only(file_docs(relative))
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert set(rule) == {"apiVersion", "kind", "metadata", "spec"}
    assert rule["metadata"]["name"]
    assert rule["metadata"]["namespace"]
    assert set(rule["spec"]) == {"groups"}
    for group in rule["spec"]["groups"]:
        assert group["name"]
        assert group["rules"]
        for entry in group["rules"]:
            assert set(entry) <= {"alert", "expr", "for", "labels", "annotations"}
            assert entry["alert"].startswith(PROMETHEUS_RULES[relative][1])
            assert entry["expr"]


@pytest.mark.parametrize("relative", PROMETHEUS_RULES)
def test_prometheus_rule_is_the_shipped_rule_file(relative: str) -> None:
    rules_file = RULES / PROMETHEUS_RULES[relative][0]
    assert only(file_docs(relative))["spec"] == yaml.safe_load(rules_file.read_text())


# -- the bot's NetworkPolicy --------------------------------------------------------------------------


def policy(variant: str, name: str = "proxybot") -> Doc:
    return only(find(built(variant), "NetworkPolicy", name))


def pod_labels(variant: str) -> dict[str, str]:
    labels: dict[str, str] = only(find(built(variant), "Deployment"))["spec"]["template"]["metadata"][
        "labels"
    ]
    return labels


def container(variant: str) -> Doc:
    spec = only(find(built(variant), "Deployment"))["spec"]["template"]["spec"]
    containers: list[Doc] = spec["containers"]
    return containers[0]


def selects(selector: Doc | None, labels: Mapping[str, str]) -> bool:
    """A label selector (matchLabels only, which is all the kit writes) against an object's labels."""
    if selector is None:
        return True
    assert set(selector) <= {"matchLabels"}, f"unexpected selector {selector}"
    return dict(selector.get("matchLabels", {})).items() <= labels.items()


def peer_admits(peer: Doc, namespace: str | None, labels: Mapping[str, str]) -> bool:
    """Whether one `to`/`from` peer admits a pod (namespace and labels) or, with namespace None, an
    address outside the cluster."""
    if namespace is None:
        return "ipBlock" in peer and peer["ipBlock"]["cidr"] in ("0.0.0.0/0", "::/0")
    if "ipBlock" in peer:
        return False
    namespace_labels = {"kubernetes.io/metadata.name": namespace}
    return selects(peer.get("namespaceSelector"), namespace_labels) and selects(
        peer.get("podSelector"), labels
    )


def port_admits(rule: Doc, port: int | str, protocol: str) -> bool:
    ports = rule.get("ports")
    return not ports or any(p.get("protocol", "TCP") == protocol and p["port"] == port for p in ports)


def allows(
    policy_doc: Doc,
    direction: str,
    port: int | str,
    *,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    protocol: str = "TCP",
) -> bool:
    peers_key = "from" if direction == "ingress" else "to"
    return any(
        port_admits(rule, port, protocol)
        and any(peer_admits(peer, namespace, labels or {}) for peer in rule[peers_key])
        for rule in policy_doc["spec"].get(direction, [])
    )


def namespace_of(url: str) -> str:
    """`http://<service>.<namespace>.svc:<port>` -> namespace."""
    host = urlsplit(url).hostname or ""
    parts = host.split(".")
    assert parts[2:3] == ["svc"], f"not an in-cluster Service address: {url}"
    return parts[1]


def port_of(url: str) -> int:
    split = urlsplit(url)
    return split.port or (443 if split.scheme == "https" else 80)


ALERTMANAGER_PODS = {"app.kubernetes.io/name": "alertmanager", "alertmanager": "main"}
PROMETHEUS_PODS = {"app.kubernetes.io/name": "prometheus", "prometheus": "k8s"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_network_policy_isolates_the_bot_pods_both_ways(variant: str) -> None:
    spec = policy(variant)["spec"]
    assert selects(spec["podSelector"], pod_labels(variant))
    assert sorted(spec["policyTypes"]) == ["Egress", "Ingress"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_ingress_admits_alertmanager_and_prometheus_to_the_served_port_only(variant: str) -> None:
    doc = policy(variant)
    # Alertmanager's webhook URL names the Service port, whose target is the container port `http`.
    receiver = yaml.safe_load((ROOT / "config" / "alertmanager" / "receiver.yaml").read_text())
    url = receiver["receivers"][0]["webhook_configs"][0]["url"]
    service = only(find(built(variant), "Service", "proxybot"))
    (service_port,) = [p for p in service["spec"]["ports"] if p["port"] == port_of(url)]
    named = {p["name"]: p["containerPort"] for p in container(variant)["ports"]}
    assert service_port["targetPort"] in named
    port = service_port["targetPort"]
    assert allows(doc, "ingress", port, namespace=MONITORING, labels=ALERTMANAGER_PODS)
    assert allows(doc, "ingress", port, namespace=MONITORING, labels=PROMETHEUS_PODS)
    assert not allows(doc, "ingress", port, namespace=MONITORING, labels={"app": "grafana"})
    assert not allows(doc, "ingress", port, namespace="default", labels=ALERTMANAGER_PODS)
    assert not allows(doc, "ingress", port, namespace="ingress-nginx", labels={"app.kubernetes.io/name": "x"})
    assert not allows(doc, "ingress", port)  # nothing from outside the cluster


@pytest.mark.parametrize("variant", VARIANTS)
def test_egress_reaches_what_the_config_names_and_little_else(variant: str, settings: Settings) -> None:
    doc = policy(variant)
    for url, pods in (
        (settings.prometheus.url, PROMETHEUS_PODS),
        (settings.alertmanager.url, ALERTMANAGER_PODS),
    ):
        assert url is not None
        assert allows(doc, "egress", port_of(str(url)), namespace=namespace_of(str(url)), labels=pods), url
    dns = {"k8s-app": "kube-dns"}
    for protocol in ("UDP", "TCP"):
        assert allows(doc, "egress", 53, namespace="kube-system", labels=dns, protocol=protocol)
    # Every client's (and target's) control plane pods serve the tenant API on 8443 behind their Service.
    for cluster in settings.clusters:
        vcluster_pod = {"app": "vcluster", "release": release_of(cluster)}
        assert allows(doc, "egress", 8443, namespace=cluster.control_plane_namespace, labels=vcluster_pod)
    # Slack and the control plane cluster's API server (the in-cluster kubeconfig's server).
    assert allows(doc, "egress", port_of(str(settings.slack.api_url)))
    for kubeconfig in {c.control_plane.kubeconfig for c in settings.clusters if c.control_plane is not None}:
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert allows(doc, "egress", port_of(server)), server
    assert allows(doc, "egress", 6443)
    assert not allows(doc, "egress", 80)
    assert not allows(doc, "egress", 8443, namespace="default", labels={"app": "web"})
    assert not allows(doc, "egress", 53, namespace="default", labels={"app": "dnsmasq"}, protocol="UDP")
    # The store: only the postgres variant talks to PostgreSQL, in the cluster or outside it.
    postgres = variant == "postgres"
    assert allows(doc, "egress", 5432) is postgres
    assert allows(doc, "egress", 5432, namespace="databases", labels={"app": "postgres"}) is postgres


def test_http_mode_adds_only_the_ingress_controller() -> None:
    (extra,) = [d for d in file_docs("http-mode/networkpolicy.yaml") if d["kind"] == "NetworkPolicy"]
    # Ingress only: an Egress policy type here would cut the bot's egress to what this one lists (nothing).
    assert extra["spec"]["policyTypes"] == ["Ingress"]
    assert selects(extra["spec"]["podSelector"], pod_labels("sqlite"))
    controller = {"app.kubernetes.io/name": "ingress-nginx"}
    assert allows(extra, "ingress", "http", namespace="ingress-nginx", labels=controller)
    assert not allows(extra, "ingress", "http", namespace=MONITORING, labels=ALERTMANAGER_PODS)


# -- HTTP mode's Ingress ------------------------------------------------------------------------------


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_ingress_routes_exactly_slacks_path_to_the_service_over_https() -> None:
    ingress = only(find(file_docs("http-mode/ingress.yaml"), "Ingress"))
    (rule,) = ingress["spec"]["rules"]
    (path,) = rule["http"]["paths"]
    assert (path["path"], path["pathType"]) == (EVENTS_PATH, "Exact")
    backend = path["backend"]["service"]
    service = only(find(built("sqlite"), "Service", backend["name"]))
    assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}
    assert ingress["metadata"]["namespace"] == service["metadata"]["namespace"]
    assert [rule["host"]] == [host for tls in ingress["spec"]["tls"] for host in tls["hosts"]]
    urls = {s for s in strings(yaml.safe_load(SLACK_MANIFEST.read_text())) if s.startswith("https://")}
    assert urls == {f"https://{rule['host']}{EVENTS_PATH}"}


# -- scraping each client's /metrics/syncer -------------------------------------------------------------


def syncer_monitors() -> list[Doc]:
    return find(built("monitoring"), "ServiceMonitor")


def sets_label(relabelings: list[Doc], label: str, value: str) -> bool:
    """A relabeling that writes `value` into `label` whatever the target (no source labels)."""
    return any(
        r.get("targetLabel", r.get("target_label")) == label
        and r.get("replacement") == value
        and not r.get("sourceLabels", r.get("source_labels"))
        and r.get("action", "replace") == "replace"
        for r in relabelings
    )


def test_every_client_cluster_is_scraped_with_its_match_labels(settings: Settings) -> None:
    monitors = syncer_monitors()
    wanted = {(c.control_plane_namespace, release_of(c)) for c in settings.clusters}
    found = {(m["metadata"]["namespace"], m["spec"]["selector"]["matchLabels"]["release"]) for m in monitors}
    assert found == wanted
    for cluster in settings.clusters:
        namespace, release = cluster.control_plane_namespace, release_of(cluster)
        (monitor,) = [m for m in monitors if m["metadata"]["namespace"] == namespace]
        assert monitor["spec"]["selector"]["matchLabels"] == {
            "app": "vcluster",
            "release": release,
            "vcluster.loft.sh/service": "true",
        }
        endpoints = monitor["spec"]["endpoints"]
        assert "/metrics/syncer" in [e["path"] for e in endpoints]
        for endpoint in endpoints:
            assert (endpoint["port"], endpoint["scheme"]) == ("https", "https")
            for label, value in cluster.match.items():
                assert sets_label(endpoint["relabelings"], label, value), (
                    cluster.name,
                    endpoint["path"],
                    label,
                )
            tls = endpoint["tlsConfig"]
            secrets = [tls["ca"]["secret"], tls["cert"]["secret"], tls["keySecret"]]
            assert secrets == [{"name": f"vc-{release}", "key": key} for key in VC_KEYS]
            assert tls["serverName"] == f"{release}.{namespace}.svc"
        labelled = [
            next(r["replacement"] for r in e["relabelings"] if r["targetLabel"] == "endpoint")
            for e in endpoints
        ]
        assert len(set(labelled)) == len(endpoints)  # one series set per path, told apart as the chart does


# The ServiceMonitor fields the kit uses, as the Prometheus Operator's CRD (monitoring.coreos.com/v1) names
# them: kubernetes-validate has no schema for a CRD, so a misspelt key would otherwise pass silently.
SERVICE_MONITOR_KEYS: dict[str, set[str]] = {
    "spec": {"selector", "namespaceSelector", "endpoints", "jobLabel"},
    "endpoint": {"port", "path", "scheme", "interval", "scrapeTimeout", "tlsConfig", "relabelings"},
    "tlsConfig": {"serverName", "ca", "cert", "keySecret"},
    "relabeling": {"sourceLabels", "targetLabel", "replacement", "regex", "action", "separator"},
    "namespaceSelector": {"matchNames", "any"},
}


@pytest.mark.parametrize("directory", ["monitoring", "self-monitoring"])
def test_service_monitors_use_only_fields_of_the_operators_crd(directory: str) -> None:
    monitors = find(built(directory), "ServiceMonitor")
    assert monitors
    for monitor in monitors:
        assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
        assert set(monitor["spec"]) <= SERVICE_MONITOR_KEYS["spec"]
        assert set(monitor["spec"].get("namespaceSelector", {})) <= SERVICE_MONITOR_KEYS["namespaceSelector"]
        for endpoint in monitor["spec"]["endpoints"]:
            assert set(endpoint) <= SERVICE_MONITOR_KEYS["endpoint"], endpoint
            assert set(endpoint.get("tlsConfig", {})) <= SERVICE_MONITOR_KEYS["tlsConfig"]
            for relabeling in endpoint.get("relabelings", []):
                assert set(relabeling) <= SERVICE_MONITOR_KEYS["relabeling"], relabeling


def bot_rules_jobs() -> set[str]:
    return set(re.findall(r'job="([^"]+)"', (RULES / "proxybot-alerts.yaml").read_text()))


def test_the_bots_own_scrape_is_the_job_its_rules_select() -> None:
    monitor = only(find(built("self-monitoring"), "ServiceMonitor"))
    service = only(find(built("sqlite"), "Service", "proxybot"))
    assert selects(monitor["spec"]["selector"], service["metadata"]["labels"])
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    # The operator names the job after the Service (no jobLabel); the plain job uses the same name.
    assert "jobLabel" not in monitor["spec"]
    assert bot_rules_jobs() == {service["metadata"]["name"]}
    plain = {job["job_name"] for job in yaml.safe_load(SCRAPE_CONFIGS.read_text())["scrape_configs"]}
    assert bot_rules_jobs() <= plain


def test_the_charts_own_servicemonitor_stays_off() -> None:
    # Both at once would scrape every vcluster_proxy_* series twice, once without the match labels.
    assert vcluster_values()["controlPlane"]["serviceMonitor"] == {"enabled": False}


# -- the plain Prometheus jobs ----------------------------------------------------------------------------


def plain_jobs() -> list[Doc]:
    jobs: list[Doc] = yaml.safe_load(SCRAPE_CONFIGS.read_text())["scrape_configs"]
    return jobs


def syncer_job(cluster: ClusterSettings) -> Doc:
    namespace = cluster.control_plane_namespace
    return only(
        [
            job
            for job in plain_jobs()
            if job.get("metrics_path") == "/metrics/syncer"
            and job["kubernetes_sd_configs"][0]["namespaces"]["names"] == [namespace]
        ]
    )


def test_plain_jobs_scrape_every_client_with_its_match_labels(settings: Settings) -> None:
    syncer_jobs = [job for job in plain_jobs() if job.get("metrics_path") == "/metrics/syncer"]
    assert len(syncer_jobs) == len(settings.clusters)
    for cluster in settings.clusters:
        job, release = syncer_job(cluster), release_of(cluster)
        namespace = cluster.control_plane_namespace
        assert job["scheme"] == "https"
        assert job["kubernetes_sd_configs"] == [{"role": "endpoints", "namespaces": {"names": [namespace]}}]
        keep = only([r for r in job["relabel_configs"] if r.get("action") == "keep"])
        assert keep["regex"] == f"vcluster;{release};true;https"
        for label, value in cluster.match.items():
            assert sets_label(job["relabel_configs"], label, value), (cluster.name, label)
        tls = job["tls_config"]
        files = [tls["ca_file"], tls["cert_file"], tls["key_file"]]
        assert files == [f"/etc/prometheus/secrets/vc-{release}/{key}" for key in VC_KEYS]
        assert tls["server_name"] == f"{release}.{namespace}.svc"


class SyncerPage(BaseHTTPRequestHandler):
    """/metrics/syncer of one tenant replica, over TLS that demands a client certificate."""

    page = (
        '# TYPE vcluster_proxy_peers gauge\nvcluster_proxy_peers{target="payments/ledger",'
        'group_version="ledger.payments.example.com/v1",state="healthy"} 2\n'
    )

    def do_GET(self) -> None:
        found = self.path == "/metrics/syncer"
        body = (self.page if found else "not found\n").encode()
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def endpoints_sd_labels(namespace: str, release: str, pod: str) -> dict[str, str]:
    """The meta labels Kubernetes' endpoints discovery gives a vCluster API Service's https endpoint."""
    return {
        "__meta_kubernetes_namespace": namespace,
        "__meta_kubernetes_service_name": release,
        "__meta_kubernetes_service_label_app": "vcluster",
        "__meta_kubernetes_service_label_release": release,
        "__meta_kubernetes_service_label_vcluster_loft_sh_service": "true",
        "__meta_kubernetes_endpoint_port_name": "https",
        "__meta_kubernetes_pod_name": pod,
    }


@pytest.mark.slow
def test_plain_syncer_job_scrapes_one_replica_once_with_the_match_labels_in_real_prometheus(
    settings: Settings, tmp_path: Path
) -> None:
    cluster = settings.clusters[0]
    namespace, release = cluster.control_plane_namespace, release_of(cluster)
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(f"{release}.{namespace}.svc").configure_cert(server_context)
    ca.configure_trust(server_context)
    server_context.verify_mode = ssl.CERT_REQUIRED  # the vc-<release> client certificate, or no page
    client = ca.issue_cert("prometheus")
    files = {"ca_file": "ca.pem", "cert_file": "client.pem", "key_file": "client-key.pem"}
    ca.cert_pem.write_to_path(str(tmp_path / files["ca_file"]))
    client.cert_chain_pems[0].write_to_path(str(tmp_path / files["cert_file"]))
    client.private_key_pem.write_to_path(str(tmp_path / files["key_file"]))

    server = ThreadingHTTPServer(("127.0.0.1", 0), SyncerPage)
    server.socket = server_context.wrap_socket(server.socket, server_side=True)
    address = f"127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    # The shipped job with endpoints discovery replaced by what it would discover (Debian's Prometheus is
    # built without Kubernetes discovery): the API Service, its headless twin, another release, another port.
    job = copy.deepcopy(syncer_job(cluster))
    del job["kubernetes_sd_configs"], job["scrape_interval"]
    job["tls_config"] |= {key: str(tmp_path / name) for key, name in files.items()}
    api = endpoints_sd_labels(namespace, release, f"{release}-0")
    headless = {k: v for k, v in api.items() if "vcluster_loft_sh_service" not in k} | {
        "__meta_kubernetes_service_name": f"{release}-headless"
    }
    other = api | {"__meta_kubernetes_service_label_release": "other"}
    kubelet = api | {"__meta_kubernetes_endpoint_port_name": "kubelet"}
    discovered = (api, headless, other, kubelet)
    job["static_configs"] = [{"targets": [address], "labels": labels} for labels in discovered]
    try:
        (tmp_path / "prometheus").mkdir()
        with Prometheus(tmp_path / "prometheus", raw_jobs=[job]) as prometheus:
            prometheus.wait_for_scrapes()
            assert len(prometheus.targets()) == 1
            # Dropped by the keep rule, not merely merged with the kept one (they would scrape the same pod).
            assert len(prometheus.api("targets")["droppedTargets"]) == len(discovered) - 1
            series = prometheus.wait_until(lambda p: p.query("vcluster_proxy_peers") or None, 30, "the page")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    (found,) = series
    assert found["metric"] == {
        "__name__": "vcluster_proxy_peers",
        "target": "payments/ledger",
        "group_version": "ledger.payments.example.com/v1",
        "state": "healthy",
        "job": job["job_name"],
        "instance": address,
        "namespace": namespace,
        "pod": f"{release}-0",
        "endpoint": "syncer",
        **cluster.match,
    }


def test_plain_bot_job_keeps_the_services_http_port() -> None:
    service = only(find(built("sqlite"), "Service", "proxybot"))
    (job,) = [job for job in plain_jobs() if job["job_name"] == "proxybot"]
    keep = only([r for r in job["relabel_configs"] if r.get("action") == "keep"])
    assert keep["source_labels"] == ["__meta_kubernetes_service_name", "__meta_kubernetes_endpoint_port_name"]
    assert keep["regex"] == f"{service['metadata']['name']};{service['spec']['ports'][0]['name']}"
    assert job["kubernetes_sd_configs"][0]["namespaces"]["names"] == [service["metadata"]["namespace"]]


# -- the guide's probe ------------------------------------------------------------------------------------


def probe_objects(cluster: ClusterSettings) -> tuple[Doc, Doc]:
    namespace = cluster.control_plane_namespace
    docs = [d for d in built("probe") if d["metadata"]["namespace"] == namespace]
    return only(find(docs, "ConfigMap")), only(find(docs, "CronJob"))


def probe_script(config_map: Doc) -> str:
    (script,) = config_map["data"].values()
    assert isinstance(script, str)
    return script


def test_every_client_has_the_guides_probe_where_verify_and_the_rule_look(settings: Settings) -> None:
    namespaces = {d["metadata"]["namespace"] for d in built("probe")}
    assert namespaces == {c.control_plane_namespace for c in settings.clusters}
    reader = only(find(built("sqlite"), "ClusterRole", "proxybot-control-plane-client"))
    (cronjob_rule,) = [r for r in reader["rules"] if r["resources"] == ["cronjobs"]]
    rule_text = (RULES / "proxy-alerts.yaml").read_text()
    for cluster in settings.clusters:
        _, cronjob = probe_objects(cluster)
        assert cronjob_rule["resourceNames"] == [cronjob["metadata"]["name"]]  # what `verify` may read
        assert f'cronjob="{cronjob["metadata"]["name"]}"' in rule_text
        # ResourceProxyProbeFailing waits 900 s: three runs of the five-minute schedule.
        assert cronjob["spec"]["schedule"] == "*/5 * * * *"
        assert "> 900" in rule_text
        assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
        assert cronjob["spec"]["jobTemplate"]["spec"]["backoffLimit"] == 0


def test_probe_cronjob_runs_its_script_with_the_exported_kubeconfig_and_no_token(settings: Settings) -> None:
    (secret,) = vcluster_values()["exportKubeConfig"]["additionalSecrets"]
    for cluster in settings.clusters:
        config_map, cronjob = probe_objects(cluster)
        release, namespace = release_of(cluster), cluster.control_plane_namespace
        pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        (script_key,) = config_map["data"]
        script_volume = next(
            n for n, v in volumes.items() if v.get("configMap", {}).get("name") == "proxy-probe"
        )
        assert c["command"] == ["/bin/sh", f"{mounts[script_volume]}/{script_key}"]
        env = {e["name"]: e["value"] for e in c["env"]}
        kubeconfig_volume = next(n for n, v in volumes.items() if "secret" in v)
        assert env["KUBECONFIG"] == f"{mounts[kubeconfig_volume]}/config"  # the exported secret's key
        assert (
            volumes[kubeconfig_volume]["secret"]["secretName"]
            == f"vc-{release}-proxy-probe"
            == secret["name"]
        )
        assert secret["server"] == f"https://{release}.{namespace}.svc:443"
        assert pod["automountServiceAccountToken"] is False  # it needs nothing of the control plane cluster
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert c["securityContext"]["readOnlyRootFilesystem"] is True


FAKE_KUBECTL = '#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGS_FILE"\nexit "${KUBECTL_EXIT:-0}"\n'


def run_script(script: str, tmp_path: Path, exit_code: int) -> tuple[int, list[str]]:
    """The probe script under /bin/sh with a kubectl that records its arguments and exits `exit_code`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "kubectl").write_text(FAKE_KUBECTL)
    (bin_dir / "kubectl").chmod(0o755)
    (tmp_path / "proxy-probe.sh").write_text(script)
    args = tmp_path / "args"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin",
        "ARGS_FILE": str(args),
        "KUBECTL_EXIT": str(exit_code),
    }
    done = subprocess.run(["/bin/sh", str(tmp_path / "proxy-probe.sh")], env=env, timeout=30, check=False)
    return done.returncode, args.read_text().splitlines()


def test_probe_script_asks_what_proxybot_probe_asks_and_fails_when_kubectl_does(
    settings: Settings, tmp_path: Path
) -> None:
    for cluster in settings.clusters:
        script = probe_script(probe_objects(cluster)[0])
        code, argv = run_script(script, tmp_path, 0)
        assert code == 0
        assert argv[:2] == ["get", "--raw"]
        assert argv[3:] == ["--request-timeout=15s"]  # the guide's and proxybot's 15 s
        probes = set()
        for target in cluster.targets:
            path = probe_path(target.probe.group_version, target.probe.namespace, target.probe.resource)
            probes.add(path.path + "?" + "&".join(f"{k}={v}" for k, v in path.query))
        assert argv[2] in probes
        failed, _ = run_script(script, tmp_path, 1)
        assert failed != 0


def test_tenant_probe_role_grants_only_the_list_the_probe_makes(settings: Settings) -> None:
    docs = file_docs("tenant-cluster/proxy-probe-rbac.yaml")
    (secret,) = vcluster_values()["exportKubeConfig"]["additionalSecrets"]
    account = secret["serviceAccount"]
    metadata = only(find(docs, "ServiceAccount"))["metadata"]
    assert (metadata["name"], metadata["namespace"]) == (account["name"], account["namespace"])
    assert not find(docs, "ClusterRole") + find(docs, "ClusterRoleBinding")  # one namespace, not cluster-wide
    role = only(find(docs, "Role"))
    binding = only(find(docs, "RoleBinding"))
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["metadata"]["namespace"] == role["metadata"]["namespace"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", **account}]
    granted = set()
    for cluster in settings.clusters:
        script = probe_script(probe_objects(cluster)[0])
        values = dict(re.findall(r'^\s*(GROUP_VERSION|RESOURCE|NAMESPACE)="([^"]+)"', script, re.MULTILINE))
        granted.add((values["GROUP_VERSION"].rpartition("/")[0], values["RESOURCE"]))
        assert role["metadata"]["namespace"] == values["NAMESPACE"]  # where the probe lists
    assert role["rules"] == [
        {"apiGroups": [group], "resources": [resource], "verbs": ["list"]}
        for group, resource in sorted(granted)
    ]


# -- the walk-through -----------------------------------------------------------------------------------

GUIDES = ("README.md", "config/deploy/README.md", "ARCHITECTURE.md", "CHANGELOG.md")
# Named by the guides but the operator's own, never in the repository.
OPERATORS_OWN = {"config/proxybot.yaml"}


@pytest.mark.parametrize("guide", GUIDES)
def test_every_repository_path_a_guide_names_exists(guide: str) -> None:
    text = (ROOT / guide).read_text()
    named = set(re.findall(r"(?<![\w./-])((?:config|scripts)/[\w./-]*[\w/-])", text)) - OPERATORS_OWN
    assert named
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert not missing, f"{guide} names files that do not exist: {missing}"


@pytest.mark.parametrize("guide", GUIDES)
def test_every_proxybot_variable_a_guide_names_is_one_proxybot_reads(guide: str) -> None:
    """A renamed or guessed variable in a command (PROXYBOT_SLACK_TOKEN) would be ignored by the pod."""
    named = set(re.findall(r"\bPROXYBOT_[A-Z][A-Z_]*[A-Z]\b", (ROOT / guide).read_text()))
    unknown = sorted(named - set(KNOWN))
    assert not unknown, f"{guide} names variables proxybot does not read: {unknown}"
