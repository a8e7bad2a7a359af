{{/*
Names. The objects of InternalRequests and the controller's identity are
named after "fullname": the release name when it starts with
"internal-services", else "<release>-internal-services" (fullnameOverride to
choose). With release internal-services they are the names config/remote
uses (internal-services-controller, internal-services-remote,
internal-services-requester). Cut to 46 characters, so that the longest
derived name, "<fullname>-controller-token", is at most 63.

The RBAC of a typed kind is named after the kind alone, exactly as
`internal-services kinds render --rbac` names it:
internal-services-<plural>.<group>-requester and -controller.
*/}}
{{- define "isr.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 46 | trimSuffix "-" -}}
{{- else if hasPrefix "internal-services" .Release.Name -}}
{{- .Release.Name | trunc 46 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-internal-services" .Release.Name | trunc 46 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount the controller connects as: "<fullname>-controller". */}}
{{- define "isr.controllerName" -}}
{{- printf "%s-controller" (include "isr.fullname" .) -}}
{{- end -}}

{{/*
A typed kind's resource, "<plural>.<group>", from an entry of .Values.kinds.
The plural defaults as RequestDefinition's does (kindNames() in
src/api/request-definition.ts): the kind in lower case, plus "s".
*/}}
{{- define "isr.plural" -}}
{{- default (printf "%ss" (lower .kind)) .plural -}}
{{- end -}}

{{- define "isr.kindResource" -}}
{{- printf "%s.%s" (include "isr.plural" .) .group -}}
{{- end -}}

{{/* The prefix of a typed kind's ClusterRoles (renderKindRbac in src/api/typed-kind-crd.ts). */}}
{{- define "isr.kindRoleBase" -}}
{{- printf "internal-services-%s" (include "isr.kindResource" .) -}}
{{- end -}}

{{/* Labels of every object of the release. */}}
{{- define "isr.labels" -}}
app.kubernetes.io/name: internal-services
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: remote
app.kubernetes.io/part-of: internal-services
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/*
Combinations of values that values.schema.json cannot express; each stops
the rendering with a message naming the value to change.
*/}}
{{- define "isr.validate" -}}
{{- $reserved := list "InternalRequest" "InternalServicesConfig" "InternalRequestApproval" "RequestDefinition" -}}
{{- $resources := dict -}}
{{- range $i, $k := .Values.kinds -}}
{{- $resource := include "isr.kindResource" $k -}}
{{- if and (eq $k.group "appstudio.redhat.com") (has $k.kind $reserved) -}}
{{- fail (printf "internal-services-remote: kinds[%d]: %s of appstudio.redhat.com is the project's own kind, not a typed kind (the chart always grants InternalRequests; name it \"InternalRequest\" in requesters[].kinds)" $i $k.kind) -}}
{{- end -}}
{{- if hasKey $resources $resource -}}
{{- fail (printf "internal-services-remote: kinds[%d]: %s is listed twice in kinds" $i $resource) -}}
{{- end -}}
{{- if gt (len (printf "%s-controller" (include "isr.kindRoleBase" $k))) 253 -}}
{{- fail (printf "internal-services-remote: kinds[%d]: the ClusterRole name internal-services-%s-controller would be longer than 253 characters: choose a shorter plural or group" $i $resource) -}}
{{- end -}}
{{- $_ := set $resources $resource $k.kind -}}
{{- end -}}
{{- range $i, $r := .Values.requesters -}}
{{- range $k := $r.kinds -}}
{{- if and (ne $k "InternalRequest") (not (hasKey $resources $k)) -}}
{{- $hint := printf "kinds lists %s" (join ", " (keys $resources | sortAlpha | default (list "no typed kind"))) -}}
{{- range $resource, $kind := $resources -}}
{{- if eq $kind $k -}}{{- $hint = printf "name the kind by its resource, %s" $resource -}}{{- end -}}
{{- end -}}
{{- fail (printf "internal-services-remote: requesters[%d].kinds: %q is neither \"InternalRequest\" nor the <plural>.<group> of an entry of kinds (%s)" $i $k $hint) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
