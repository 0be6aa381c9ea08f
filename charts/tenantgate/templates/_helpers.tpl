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

{{/* The chart's own etcd cluster (run when etcd.endpoints is empty): its StatefulSet, headless Service and pods. */}}
{{- define "tenantgate.etcdName" -}}
{{- printf "%s-etcd" (include "tenantgate.fullname" . | trunc 50 | trimSuffix "-") -}}
{{- end -}}

{{/* Never the labels of tenantgate's pods: its Service, Deployment and PDB must not select etcd's. */}}
{{- define "tenantgate.etcdSelectorLabels" -}}
app.kubernetes.io/name: {{ include "tenantgate.name" . | trunc 58 | trimSuffix "-" }}-etcd
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: etcd
{{- end -}}

{{/* A member's stable address: <pod>.<headless service>.<namespace>.svc */}}
{{- define "tenantgate.etcdMemberHost" -}}
{{- $name := include "tenantgate.etcdName" .root -}}
{{- printf "%s-%d.%s.%s.svc" $name (int .index) $name .root.Release.Namespace -}}
{{- end -}}

{{/* The client URLs tenantgate is given: etcd.endpoints, or every member of the chart's own cluster. */}}
{{- define "tenantgate.etcdEndpoints" -}}
{{- if .Values.etcd.endpoints -}}
{{- .Values.etcd.endpoints -}}
{{- else -}}
{{- $urls := list -}}
{{- range $i := until (int .Values.etcd.cluster.replicas) -}}
{{- $urls = append $urls (printf "http://%s:2379" (include "tenantgate.etcdMemberHost" (dict "root" $ "index" $i))) -}}
{{- end -}}
{{- join "," $urls -}}
{{- end -}}
{{- end -}}
