{{/* The container image: repository:tag, or repository@digest when a digest is given. */}}
{{- define "tenantgate.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* Container fields every tenantgate container shares: image, pull policy. */}}
{{- define "tenantgate.imageFields" -}}
image: {{ include "tenantgate.image" . }}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end -}}

{{/* Pod-level fields: pull secrets, node selector, tolerations of a component (dict "root" . "component" .Values.webhook). */}}
{{- define "tenantgate.podPlacement" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Whether the tenantgate-config ConfigMap is rendered (non-default config or namespace). */}}
{{- define "tenantgate.hasConfig" -}}
{{- if or .Values.config (ne .Release.Namespace "tenantgate-system") }}true{{ end -}}
{{- end -}}

{{/* tenantgate.yaml: .Values.config; outside tenantgate-system also the namespace-dependent defaults. */}}
{{- define "tenantgate.configYaml" -}}
{{- $config := deepCopy .Values.config -}}
{{- if ne .Release.Namespace "tenantgate-system" -}}
{{- $_ := set $config "systemNamespace" .Release.Namespace -}}
{{- if not (hasKey $config "privileged") -}}
{{- $_ := set $config "privileged" (dict "users" (list (printf "system:serviceaccount:%s:tenantgate-controller" .Release.Namespace)) "groups" (list "system:masters")) -}}
{{- end -}}
{{- end -}}
{{ toYaml $config }}
{{- end -}}
