{{/*
Rules across values that values.schema.json cannot express. deployment.yaml
includes this, so a violation stops `helm install` and `helm template`.
*/}}
{{- define "kube-namesrv.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount > 1 needs leaderElection.enabled=true: several managers without a leader would all reconcile the same clusters" }}
{{- end }}
{{- if and .Values.nameserver.enabled .Values.watchNamespaces }}
{{- $ns := include "kube-namesrv.nameserverNamespace" . }}
{{- if not (has $ns .Values.watchNamespaces) }}
{{- fail (printf "nameserver.namespace %q is not in watchNamespaces %v: the operator would never reconcile it" $ns .Values.watchNamespaces) }}
{{- end }}
{{- range .Values.nameserver.publish.targets }}
{{- if not (has .namespace $.Values.watchNamespaces) }}
{{- fail (printf "nameserver.publish.targets namespace %q is not in watchNamespaces %v: the operator may not write there" .namespace $.Values.watchNamespaces) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
