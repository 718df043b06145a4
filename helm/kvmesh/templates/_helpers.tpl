{{/* Names and labels. */}}
{{- define "kvmesh.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kvmesh.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kvmesh.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The image of a component: (dict "root" $ "image" .Values.image.router) */}}
{{- define "kvmesh.image" -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}

{{/* The worker settings of a model: its own keys over .Values.worker. */}}
{{- define "kvmesh.modelWorker" -}}
{{- $w := deepCopy .root.Values.worker -}}
{{- range $key := list "threads" "kvType" "kvMemory" "kvHostMemory" "kvEviction" "devices" "split" "role" "extraArgs" "resources" "gpu" -}}
{{- if hasKey $.model $key -}}
{{- $_ := set $w $key (get $.model $key) -}}
{{- end -}}
{{- end -}}
{{- toYaml $w -}}
{{- end -}}

{{/* terminationGracePeriodSeconds: given, or preStop + drain + 15; never
     shorter than preStop + drain. (dict "c" .Values.router "what" "router") */}}
{{- define "kvmesh.grace" -}}
{{- $min := add .c.preStopSeconds .c.drainSeconds -}}
{{- if and .c.terminationGracePeriodSeconds (le (int .c.terminationGracePeriodSeconds) (int $min)) -}}
{{- fail (printf "%s.terminationGracePeriodSeconds (%v) must exceed %s.preStopSeconds + %s.drainSeconds (%v), or a drain is cut off" .what .c.terminationGracePeriodSeconds .what .what $min) -}}
{{- end -}}
{{- default (add $min 15) .c.terminationGracePeriodSeconds -}}
{{- end -}}

{{/* The restricted container securityContext. */}}
{{- define "kvmesh.containerSecurity" -}}
securityContext:
  runAsNonRoot: true
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
  seccompProfile:
    type: RuntimeDefault
{{- end -}}

{{- define "kvmesh.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: {{ .Values.security.runAsUser }}
  runAsGroup: {{ .Values.security.runAsGroup }}
  fsGroup: {{ .Values.security.fsGroup }}
  seccompProfile:
    type: RuntimeDefault
{{- end -}}

{{/* Topology spread over the given selector labels. (dict "root" $ "selector" DICT) */}}
{{- define "kvmesh.spread" -}}
{{- if .root.Values.topologySpread.enabled }}
topologySpreadConstraints:
{{- range .root.Values.topologySpread.topologyKeys }}
  - maxSkew: {{ $.root.Values.topologySpread.maxSkew }}
    topologyKey: {{ . }}
    whenUnsatisfiable: {{ $.root.Values.topologySpread.whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- toYaml $.selector | nindent 8 }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "kvmesh.apiKeySecret" -}}
{{- default (printf "%s-api-keys" (include "kvmesh.fullname" .)) .Values.apiKeys.existingSecret -}}
{{- end -}}
