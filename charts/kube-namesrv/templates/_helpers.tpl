{{/* Names are cut to 63 characters, the limit of a label value. */}}
{{- define "kube-namesrv.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kube-namesrv.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kube-namesrv.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "kube-namesrv.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The manager pods; the component keeps them apart from NameServer pods. */}}
{{- define "kube-namesrv.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kube-namesrv.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "kube-namesrv.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kube-namesrv.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "kube-namesrv.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The operator's own image unless namesrvImage is set: one release, one image. */}}
{{- define "kube-namesrv.namesrvImage" -}}
{{- default (include "kube-namesrv.image" .) .Values.namesrvImage }}
{{- end }}

{{- define "kube-namesrv.nameserverName" -}}
{{- default .Release.Name .Values.nameserver.name }}
{{- end }}

{{- define "kube-namesrv.nameserverNamespace" -}}
{{- default .Release.Namespace .Values.nameserver.namespace }}
{{- end }}

{{/* The published address ConfigMap of the chart's NameServerCluster. */}}
{{- define "kube-namesrv.addressConfigMap" -}}
{{- default (printf "%s-namesrv-addr" (include "kube-namesrv.nameserverName" .)) .Values.nameserver.publish.configMapName }}
{{- end }}

{{/*
What the manager does, as config/rbac/role.yaml (generated from the
+kubebuilder:rbac markers) says; test/install fails when the two differ.
Namespaces are cluster-scoped, so only cluster mode (the argument true) can
grant them; namespaced mode does not watch them.
*/}}
{{- define "kube-namesrv.managerRules" -}}
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create, delete, get, list, patch, watch]
{{- if . }}
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get, list, watch]
{{- end }}
- apiGroups: [""]
  resources: [pods]
  verbs: [delete, get, list, watch]
- apiGroups: [""]
  resources: [secrets]
  verbs: [create, get]
- apiGroups: [""]
  resources: [services]
  verbs: [create, delete, get, list, patch, watch]
- apiGroups: [apps]
  resources: [statefulsets]
  verbs: [create, get, list, patch, watch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [create, delete, get, list, patch, watch]
- apiGroups: [rocketmq.kube-namesrv.io]
  resources: [nameserverclusters]
  verbs: [get, list, patch, watch]
- apiGroups: [rocketmq.kube-namesrv.io]
  resources: [nameserverclusters/finalizers]
  verbs: [update]
- apiGroups: [rocketmq.kube-namesrv.io]
  resources: [nameserverclusters/status]
  verbs: [get, patch]
{{- end }}
