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

{{/* Whether tenantgate-config differs from the shipped defaults (values.config, or another namespace). */}}
{{- define "tenantgate.hasConfig" -}}
{{- if or .Values.config (ne .Release.Namespace "tenantgate-system") .Values.fleet.member.cluster }}true{{ end -}}
{{- end -}}

{{/*
tenantgate.yaml: the shipped defaults (files/config, generated from DEFAULT_CONFIG by `make config`)
with values.config over them (maps merge, lists are replaced); outside tenantgate-system also the
namespace and the controller's privileged ServiceAccount there.
*/}}
{{- define "tenantgate.configYaml" -}}
{{- $shipped := .Files.Get "files/config/tenantgate-config.yaml" | fromYaml -}}
{{- $config := get $shipped.data "tenantgate.yaml" | fromYaml -}}
{{- if ne .Release.Namespace "tenantgate-system" -}}
{{- $_ := set $config "systemNamespace" .Release.Namespace -}}
{{- $users := list -}}
{{- range $config.privileged.users -}}
{{- $users = append $users (ternary (printf "system:serviceaccount:%s:tenantgate-controller" $.Release.Namespace) . (eq . "system:serviceaccount:tenantgate-system:tenantgate-controller")) -}}
{{- end -}}
{{- $_ := set $config.privileged "users" $users -}}
{{- end -}}
{{- with .Values.fleet.member.cluster -}}
{{- /* A fleet member: its cluster name, and where the hub's kubeconfig is mounted (docs/fleet.md). */ -}}
{{- $_ := set $config "clusterName" . -}}
{{- $_ := set $config "fleet" (merge (dict "hubKubeconfig" (include "tenantgate.fleetHubKubeconfig" $)) ($config.fleet | default dict)) -}}
{{- end -}}
{{- $config = mergeOverwrite $config (deepCopy .Values.config) -}}
{{ toYaml $config }}
{{- end -}}

{{/* Where a fleet member's webhook and controller find the hub's kubeconfig (Secret fleet.member.hubSecret). */}}
{{- define "tenantgate.fleetHubKubeconfig" -}}/etc/tenantgate-fleet-hub/kubeconfig{{- end -}}

{{/* tenantgate.yaml's visibility (all, own): who may read Projects and list namespaces (docs/visibility.md). */}}
{{- define "tenantgate.visibility" -}}
{{- (include "tenantgate.configYaml" . | fromYaml).visibility | default "all" -}}
{{- end -}}
