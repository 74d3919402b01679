{{/* Names, labels and the checks every template shares. */}}

{{- define "proxybot.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object's name: the release name when it holds the chart's name. */}}
{{- define "proxybot.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "proxybot.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "proxybot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "proxybot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "proxybot.labels" -}}
{{ include "proxybot.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "proxybot.serviceAccountName" -}}
{{- default (include "proxybot.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "proxybot.configMapName" -}}
{{- default (printf "%s-config" (include "proxybot.fullname" .)) .Values.existingConfigMap -}}
{{- end -}}

{{- define "proxybot.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The store URL the config names (sqlite by default, as proxybot's own default). */}}
{{- define "proxybot.storeUrl" -}}
{{- (.Values.config.store | default dict).url | default "sqlite:///proxybot.db" -}}
{{- end -}}

{{- define "proxybot.postgres" -}}
{{- if or .Values.storeUrlFromSecret (hasPrefix "postgres" (include "proxybot.storeUrl" .)) -}}true{{- end -}}
{{- end -}}

{{/* The SQLite file's directory, where the volume goes; empty for PostgreSQL or a store from the Secret. */}}
{{- define "proxybot.sqliteDir" -}}
{{- $url := include "proxybot.storeUrl" . -}}
{{- if and (not .Values.storeUrlFromSecret) (hasPrefix "sqlite:////" $url) -}}
{{- dir (trimPrefix "sqlite:///" $url) -}}
{{- end -}}
{{- end -}}

{{/* The vCluster Platform the fleet is discovered from (config.platform.url); empty without it. */}}
{{- define "proxybot.platformUrl" -}}
{{- (.Values.config.platform | default dict).url | default "" -}}
{{- end -}}

{{/* The platform URL's port when it names one that the HTTPS egress (443, 6443) does not cover. */}}
{{- define "proxybot.platformPort" -}}
{{- $url := include "proxybot.platformUrl" . -}}
{{- if $url -}}
{{- $port := regexFind ":[0-9]+$" (urlParse $url).host | trimPrefix ":" -}}
{{- if and $port (not (has $port (list "443" "6443"))) -}}{{ $port }}{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The kubeconfig files config.clusters names (a client's, its control plane's, a target's `direct` or control
plane access, a refinement's `direct`), each once, as a JSON array: the files kubeconfigSecret must hold. The
in-cluster one is the ConfigMap's own.
*/}}
{{- define "proxybot.kubeconfigFiles" -}}
{{- $accesses := list -}}
{{- range .Values.config.clusters | default list -}}
{{- if hasKey . "kubeconfig" -}}
{{- $accesses = append (append $accesses .) (.control_plane | default dict) -}}
{{- range .targets | default list -}}
{{- $accesses = append (append $accesses (.direct | default dict)) (.control_plane | default dict) -}}
{{- end -}}
{{- else -}}
{{- range $_, $access := .direct | default dict -}}
{{- $accesses = append $accesses $access -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $files := list -}}
{{- range $accesses -}}
{{- if and .kubeconfig (ne .kubeconfig "in-cluster.kubeconfig.yaml") -}}
{{- $files = append $files .kubeconfig -}}
{{- end -}}
{{- end -}}
{{- $files | uniq | toJson -}}
{{- end -}}

{{/*
The checks that the schema cannot make, each failing with the value to change. Called by the Deployment.
*/}}
{{- define "proxybot.validate" -}}
{{- $url := include "proxybot.storeUrl" . -}}
{{- if and (gt (int .Values.replicaCount) 1) (not (include "proxybot.postgres" .)) -}}
{{- fail (printf "replicaCount: %d replicas need a PostgreSQL store shared by them, and config.store.url is %s (SQLite has one writer): set config.store.url to postgresql://... or storeUrlFromSecret: true with PROXYBOT_STORE_URL in existingSecret" (int .Values.replicaCount) $url) -}}
{{- end -}}
{{- if and (hasPrefix "postgres" $url) (regexMatch "^postgres(ql)?://[^/@]*:[^/@]*@" $url) -}}
{{- fail "config.store.url: holds a password, which would land in a ConfigMap: put the URL in existingSecret as PROXYBOT_STORE_URL and set storeUrlFromSecret: true" -}}
{{- end -}}
{{- if and .Values.secret.create .Values.existingSecret -}}
{{- fail "existingSecret: set it or secret.create, not both (secret.create makes the chart create <fullname>-tokens)" -}}
{{- end -}}
{{- if not (or .Values.secret.create .Values.existingSecret) -}}
{{- fail "existingSecret: required: the name of the Secret holding the PROXYBOT_* variables (bot token, signing secret or app token, webhook token), or secret.create: true to have the chart create it from secret.values" -}}
{{- end -}}
{{- $platform := include "proxybot.platformUrl" . -}}
{{- if not .Values.kubeconfigSecret -}}
{{- if not $platform -}}
{{- fail "kubeconfigSecret: required: the name of the Secret whose files are the tenant clusters' kubeconfigs (config/deploy/README.md, step 5), or set config.platform.url to read the fleet through the vCluster Platform with one access key" -}}
{{- end -}}
{{- $files := include "proxybot.kubeconfigFiles" . | fromJsonArray -}}
{{- if $files -}}
{{- fail (printf "kubeconfigSecret: required: config.clusters names %s, which only a file of kubeconfigSecret can be (a client the platform reads needs no kubeconfig: leave it out of its entry)" (join ", " $files)) -}}
{{- end -}}
{{- end -}}
{{- if $platform -}}
{{- if (.Values.config.platform).access_key_file -}}
{{- fail "config.platform.access_key_file: leave it unset: the chart mounts the access key from existingSecret's PROXYBOT_PLATFORM_ACCESS_KEY" -}}
{{- end -}}
{{- else if .Values.platformCA.configMap -}}
{{- fail "platformCA.configMap: only with config.platform.url: it is the CA of the vCluster Platform the fleet is read from" -}}
{{- end -}}
{{- if and .Values.socketMode .Values.ingress.enabled -}}
{{- fail "ingress.enabled: Socket Mode (socketMode: true) needs no Ingress: proxybot dials Slack itself" -}}
{{- end -}}
{{- end -}}

{{/* The secret's name: the existing one, or the chart's own. */}}
{{- define "proxybot.secretName" -}}
{{- if .Values.secret.create -}}
{{- printf "%s-tokens" (include "proxybot.fullname" .) -}}
{{- else -}}
{{- .Values.existingSecret -}}
{{- end -}}
{{- end -}}

{{/* Where the Secret's keys are files (PROXYBOT_SECRETS_DIR). */}}
{{- define "proxybot.secretsDir" -}}
/var/run/secrets/proxybot
{{- end -}}

{{/*
The Secret's keys (config/environment.py SECRET_OVERRIDES) as JSON: `required`, those the pod waits for
(the bot token, the webhook token, the signing secret in HTTP mode or the app token in Socket Mode, the
platform's access key with config.platform.url, the store URL with storeUrlFromSecret), and `optional`,
the others.
*/}}
{{- define "proxybot.secretKeys" -}}
{{- $required := list "PROXYBOT_SLACK_BOT_TOKEN" "PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN" -}}
{{- $optional := list "PROXYBOT_ALERTMANAGER_WEBHOOK_PASSWORD" -}}
{{- if include "proxybot.platformUrl" . -}}
{{- $required = append $required "PROXYBOT_PLATFORM_ACCESS_KEY" -}}
{{- else -}}
{{- $optional = append $optional "PROXYBOT_PLATFORM_ACCESS_KEY" -}}
{{- end -}}
{{- if .Values.socketMode -}}
{{- $required = append $required "PROXYBOT_SLACK_APP_TOKEN" -}}
{{- $optional = append $optional "PROXYBOT_SLACK_SIGNING_SECRET" -}}
{{- else -}}
{{- $required = append $required "PROXYBOT_SLACK_SIGNING_SECRET" -}}
{{- $optional = append $optional "PROXYBOT_SLACK_APP_TOKEN" -}}
{{- end -}}
{{- if .Values.storeUrlFromSecret -}}
{{- $required = append $required "PROXYBOT_STORE_URL" -}}
{{- else -}}
{{- $optional = append $optional "PROXYBOT_STORE_URL" -}}
{{- end -}}
{{- dict "required" $required "optional" $optional | toJson -}}
{{- end -}}

{{/* A cluster's or target's namespace in the control plane cluster: configured, else vcluster-<name>. */}}
{{- define "proxybot.planeNamespace" -}}
{{- .plane.namespace | default (printf "vcluster-%s" .name) -}}
{{- end -}}

{{/*
The control_plane namespaces of the config as JSON: {"clients": [...], "targets": [...]}, in the order the
config names them, each once (config/clusters.py: control_plane_namespace).
*/}}
{{- define "proxybot.planes" -}}
{{- $clients := list -}}
{{- $targets := list -}}
{{- range .Values.config.clusters | default list -}}
{{- if .control_plane -}}
{{- $clients = append $clients (include "proxybot.planeNamespace" (dict "plane" .control_plane "name" .name)) -}}
{{- end -}}
{{- range .targets | default list -}}
{{- if .control_plane -}}
{{- $targets = append $targets (include "proxybot.planeNamespace" (dict "plane" .control_plane "name" (splitList "/" .name | last))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- dict "clients" ($clients | uniq) "targets" ($targets | uniq) | toJson -}}
{{- end -}}

{{/* The vCluster release of a client cluster: control_plane.release, else its name. */}}
{{- define "proxybot.release" -}}
{{- ((.control_plane | default dict).release) | default .name -}}
{{- end -}}

{{/* A PrometheusRule whose spec is one of config/rules' files (through the files/rules link). */}}
{{- define "proxybot.prometheusRule" -}}
{{- $root := .root }}
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: {{ include "proxybot.fullname" $root }}-{{ .suffix }}
  namespace: {{ $root.Values.prometheusRule.namespace | default $root.Release.Namespace }}
  labels:
    {{- include "proxybot.labels" $root | nindent 4 }}
    {{- with $root.Values.prometheusRule.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  {{- $root.Files.Get (printf "files/rules/%s" .file) | nindent 2 }}
{{- end -}}
