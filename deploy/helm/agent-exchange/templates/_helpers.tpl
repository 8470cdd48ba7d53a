{{/* Names, labels and the pieces every service's templates share. */}}

{{- define "aex.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object of the release. */}}
{{- define "aex.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: agent-exchange
{{- end -}}

{{/* The pods of the whole release (NetworkPolicies: "the exchange's own pods"). */}}
{{- define "aex.releaseSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The pods of one service; call with (dict "root" $ "name" <service>). */}}
{{- define "aex.selector" -}}
{{ include "aex.releaseSelector" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "aex.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "aex.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "aex.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
  A secretKeyRef to one value: key `key` of the platform team's Secret `existing` when set, else key
  `ownKey` of the chart's own Secret (`own`, default <fullname>-secrets).
  Call with (dict "root" $ "existing" … "key" … "ownKey" … ["own" …]).
*/}}
{{- define "aex.secretKeyRef" -}}
secretKeyRef:
  {{- if .existing }}
  name: {{ .existing }}
  key: {{ .key }}
  {{- else }}
  name: {{ default (printf "%s-secrets" (include "aex.fullname" .root)) .own }}
  key: {{ .ownKey }}
  {{- end }}
{{- end -}}

{{/* PUBLIC_BASE_URL: given, or https://<ingress host>; a deployment without one is refused. */}}
{{- define "aex.publicBaseUrl" -}}
{{- if .Values.config.PUBLIC_BASE_URL -}}
{{- .Values.config.PUBLIC_BASE_URL -}}
{{- else if and .Values.gateway.ingress.enabled .Values.gateway.ingress.host -}}
{{- printf "https://%s" .Values.gateway.ingress.host -}}
{{- else -}}
{{- fail "config.PUBLIC_BASE_URL is required (the gateway's public address: checkout URLs and did:web identities are built on it), or gateway.ingress.enabled with gateway.ingress.host" -}}
{{- end -}}
{{- end -}}

{{/* Checks done once per render: what the schema cannot say. */}}
{{- define "aex.validate" -}}
{{- if and (not .Values.nats.url) (not .Values.nats.existingSecret) -}}
{{- fail "nats.url or nats.existingSecret is required: the services talk over NATS JetStream" -}}
{{- end -}}
{{- if and (not .Values.postgres.url) (not .Values.postgres.existingSecret) -}}
{{- fail "postgres.url or postgres.existingSecret is required: every service keeps its data in Postgres" -}}
{{- end -}}
{{- range $name, $svc := .Values.services -}}
{{- if and $svc.databaseSecretKey (not $.Values.postgres.existingSecret) -}}
{{- fail (printf "services.%s.databaseSecretKey needs postgres.existingSecret (the Secret holding that key)" $name) -}}
{{- end -}}
{{- if and $svc.autoscaling.enabled (gt (int $svc.autoscaling.minReplicas) (int $svc.autoscaling.maxReplicas)) -}}
{{- fail (printf "services.%s.autoscaling.minReplicas (%d) is above maxReplicas (%d)" $name (int $svc.autoscaling.minReplicas) (int $svc.autoscaling.maxReplicas)) -}}
{{- end -}}
{{- end -}}
{{- $encoder := .Values.discovery.encoder -}}
{{- if and (eq $encoder.type "openai") (not $encoder.url) -}}
{{- fail "discovery.encoder.url is required when discovery.encoder.type is openai: the base URL of the embeddings endpoint (e.g. http://tei:8080/v1)" -}}
{{- end -}}
{{- if and (eq $encoder.type "openai") (not $encoder.model) -}}
{{- fail "discovery.encoder.model is required when discovery.encoder.type is openai: the model the endpoint embeds with" -}}
{{- end -}}
{{- if regexMatch "@[0-9]+$" (toString $encoder.model) -}}
{{- fail "discovery.encoder.model must not end in @<digits>: stored embeddings name their dimensions that way (openai:<model>@<dims>)" -}}
{{- end -}}
{{- $_ := include "aex.publicBaseUrl" . -}}
{{- end -}}

{{/* D22.1: the catalog's sentence encoder, as environment variables of the catalog alone. */}}
{{- define "aex.encoderEnv" -}}
{{- $e := .Values.discovery.encoder -}}
- name: DISCOVERY_ENCODER
  value: {{ $e.type | quote }}
{{- range $name, $value := dict "DISCOVERY_ENCODER_URL" $e.url "DISCOVERY_ENCODER_MODEL" $e.model "DISCOVERY_ENCODER_DIMENSIONS" $e.dimensions }}
{{- if $value }}
- name: {{ $name }}
  value: {{ toString $value | quote }}
{{- end }}
{{- end }}
- name: DISCOVERY_ENCODER_BATCH_SIZE
  value: {{ $e.batchSize | toString | quote }}
- name: DISCOVERY_ENCODER_TIMEOUT_MS
  value: {{ $e.timeoutMs | toString | quote }}
{{- if or $e.apiKey $e.existingSecret }}
- name: DISCOVERY_ENCODER_API_KEY
  valueFrom:
    {{- include "aex.secretKeyRef" (dict "root" . "existing" $e.existingSecret "key" $e.existingSecretKey "ownKey" "DISCOVERY_ENCODER_API_KEY") | nindent 4 }}
{{- end }}
{{- end -}}

{{/* The TCP port of the embeddings endpoint (the catalog's egress): the URL's own, or its scheme's. */}}
{{- define "aex.encoderPort" -}}
{{- $u := urlParse .Values.discovery.encoder.url -}}
{{- $port := regexFind ":[0-9]+$" $u.host | trimPrefix ":" -}}
{{- $port | default (ternary "443" "80" (eq $u.scheme "https")) -}}
{{- end -}}

{{/* The command that starts one service, or its migrations (`script`: main or migrate); `live`:
     restart on source changes (development.liveUpdate). */}}
{{- define "aex.command" -}}
- node
{{- if and .live (eq .script "main") }}
- --watch-path=/app/services
- --watch-path=/app/packages
{{- end }}
- --import
- tsx
- --import
- /app/packages/platform/src/telemetry/register.ts
- {{ printf "/app/services/%s/src/%s.ts" .name .script }}
{{- end -}}

{{/* DATABASE_URL of one service: its own key of the platform team's Secret, or the shared URL. */}}
{{- define "aex.databaseEnv" -}}
- name: DATABASE_URL
  valueFrom:
    {{- include "aex.secretKeyRef" (dict "root" .root "existing" .root.Values.postgres.existingSecret "key" (default .root.Values.postgres.existingSecretKey .svc.databaseSecretKey) "ownKey" "DATABASE_URL" "own" .own) | nindent 4 }}
{{- end -}}

{{- define "aex.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "aex.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: {{ not .Values.development.liveUpdate }}
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end -}}
