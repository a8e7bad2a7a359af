{{/*
Names. The prefix of every object name ("fullname") is the release name when
that already starts with the chart's name, else "<release>-<chart>"; it is cut
to 44 characters so that the longest derived name ("<fullname>-controller-metrics",
a Service, at most 63) stays a valid name.
*/}}
{{- define "internal-services.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "internal-services.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 44 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "internal-services.name" . -}}
{{- if hasPrefix $name .Release.Name -}}
{{- .Release.Name | trunc 44 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 44 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The controller's Deployment, ServiceAccount, Roles: "<fullname>-controller". */}}
{{- define "internal-services.controllerName" -}}
{{- printf "%s-controller" (include "internal-services.fullname" .) -}}
{{- end -}}

{{- define "internal-services.remoteKubeconfigSecret" -}}
{{- default (printf "%s-remote-kubeconfig" (include "internal-services.fullname" .)) .Values.remote.kubeconfigSecret.name -}}
{{- end -}}

{{- define "internal-services.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Selector labels: fixed for the life of a release (a Deployment's selector is immutable). */}}
{{- define "internal-services.selectorLabels" -}}
app.kubernetes.io/name: {{ include "internal-services.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{/* Labels of every object of the release. */}}
{{- define "internal-services.labels" -}}
app.kubernetes.io/name: {{ include "internal-services.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* Labels of the controller's own objects (Deployment, Service, RBAC). */}}
{{- define "internal-services.controllerLabels" -}}
{{ include "internal-services.labels" . }}
app.kubernetes.io/component: controller
{{- end -}}

{{/*
Leader election: on when asked for, or (when not said) when more than one
replica runs.
*/}}
{{- define "internal-services.leaderElect" -}}
{{- $le := .Values.leaderElection.enabled -}}
{{- if kindIs "invalid" $le -}}
{{- if gt (int .Values.replicas) 1 }}true{{ end -}}
{{- else if $le -}}
true
{{- end -}}
{{- end -}}

{{/* Namespace of the remote kubeconfig Secrets. */}}
{{- define "internal-services.secretsNamespace" -}}
{{- default .Release.Namespace .Values.remote.secretsNamespace -}}
{{- end -}}

{{/*
Combinations of values that values.schema.json cannot express; each stops
the rendering with a message naming the values to change.
*/}}
{{- define "internal-services.validate" -}}
{{- $r := .Values.remote -}}
{{- if not (or $r.kubeconfigSecret.enabled $r.secrets $r.secretsSelector $r.mountedSecrets .Values.kcp.kubeconfigSecret) -}}
{{- fail "internal-services: no remote cluster to serve: set remote.kubeconfigSecret.enabled=true (a kubeconfig Secret mounted as the default remote), or list kubeconfig Secrets in remote.secrets or remote.mountedSecrets, or set remote.secretsSelector, or kcp.kubeconfigSecret (a kcp provider workspace)" -}}
{{- end -}}
{{- $mounted := dict -}}
{{- range $r.mountedSecrets -}}
{{- $remote := default .name .remote -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" $remote) -}}
{{- fail (printf "internal-services: remote.mountedSecrets: the remote of Secret %q would be named %q, which is not a DNS label (lower-case letters, digits and \"-\", at most 63): set its remote" .name $remote) -}}
{{- end -}}
{{- if or (hasKey $mounted $remote) (eq $remote (default "default" $r.name) | and $r.kubeconfigSecret.enabled) -}}
{{- fail (printf "internal-services: remote.mountedSecrets: remote %q is named twice (by another mounted Secret, or it is the default remote's name): give each its own remote" $remote) -}}
{{- end -}}
{{- $_ := set $mounted $remote true -}}
{{- end -}}
{{- if and $r.secretsSelector (or (not $r.secretsNamespace) (eq $r.secretsNamespace .Release.Namespace)) -}}
{{- fail (printf "internal-services: remote.secretsSelector lets the controller list and watch every Secret of remote.secretsNamespace (RBAC cannot narrow that to a label), so that namespace must hold nothing but remote kubeconfigs: set remote.secretsNamespace to such a namespace, other than the release namespace %q (or name the Secrets in remote.secrets instead)" .Release.Namespace) -}}
{{- end -}}
{{- if and (gt (int .Values.replicas) 1) (not (include "internal-services.leaderElect" .)) -}}
{{- fail (printf "internal-services: replicas=%d needs leader election (only one controller may act): leave leaderElection.enabled unset or set it true" (int .Values.replicas)) -}}
{{- end -}}
{{- if and .Values.monitoring.serviceMonitor.enabled (not (and .Values.metrics.enabled .Values.metrics.service.enabled)) -}}
{{- fail "internal-services: monitoring.serviceMonitor.enabled needs metrics.enabled and metrics.service.enabled (it scrapes the metrics Service)" -}}
{{- end -}}
{{- end -}}
