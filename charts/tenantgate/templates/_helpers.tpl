{{/* The release's name for its objects, at most 63 characters (DNS label). */}}
{{- define "tenantgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "tenantgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the pods: never change them on upgrade (a Deployment's selector is immutable). */}}
{{- define "tenantgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tenantgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tenantgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "tenantgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Cluster-scoped objects are named after the release and its namespace: two releases never share one. */}}
{{- define "tenantgate.clusterName" -}}
{{- printf "%s-%s" .Release.Namespace (include "tenantgate.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tenantgate.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "tenantgate.fullname" .)) .Values.tls.existingSecret -}}
{{- end -}}

{{- define "tenantgate.tenantCASecretName" -}}
{{- default (printf "%s-tenant-ca" (include "tenantgate.fullname" .)) .Values.tenantCA.existingSecret -}}
{{- end -}}

{{- define "tenantgate.inClusterAddress" -}}
{{- default (printf "%s.%s.svc:%d" (include "tenantgate.fullname" .) .Release.Namespace (int .Values.service.port)) .Values.inClusterAddress -}}
{{- end -}}

{{/* "5s", "500ms" or "5" (tenantgate's duration forms) as whole seconds, rounded up: for checking the grace period. */}}
{{- define "tenantgate.seconds" -}}
{{- $d := toString . -}}
{{- if hasSuffix "ms" $d -}}{{- div (add (trimSuffix "ms" $d | int) 999) 1000 -}}
{{- else if hasSuffix "s" $d -}}{{- trimSuffix "s" $d | int -}}
{{- else if regexMatch "^[0-9]+$" $d -}}{{- $d | int -}}
{{- else -}}{{- fail (printf "shutdown durations are written like 5s or 500ms; got %q" $d) -}}
{{- end -}}
{{- end -}}
