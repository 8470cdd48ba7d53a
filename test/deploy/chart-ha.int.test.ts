import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ofKind, render, repoRoot, validateKubeObject, type KubeObject } from './helm.js';

// The chart paired with a three-node NATS JetStream cluster (the official NATS chart) and a
// CloudNativePG cluster: ci/ha-values.yaml, the example docs/deploy.md "High availability" explains,
// rendered as helm would install it. Every value set's replica count matches the NATS it pairs with.

const SERVICES = ['catalog', 'gateway', 'identity', 'transactions', 'wallet', 'webhooks'];

type Env = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } };
type Workload = KubeObject & {
  spec: {
    replicas?: number;
    template: { metadata: { labels: Record<string, string> }; spec: { containers: { env?: Env[] }[]; topologySpreadConstraints?: { topologyKey: string }[] } };
  };
};
type Data = KubeObject & { data: Record<string, string> };
type StringData = KubeObject & { stringData: Record<string, string> };

const serviceOf = (o: KubeObject) => o.metadata.name.replace('aex-agent-exchange-', '');

describe('the Helm chart with a NATS cluster and CloudNativePG (ci/ha-values.yaml)', () => {
  it('keeps every stream and bucket on three NATS nodes and lists every node in NATS_URL', async () => {
    const objects = await render('ha-values.yaml');
    for (const o of objects) validateKubeObject(o);
    const config = ofKind<Data>(objects, 'ConfigMap').find((c) => c.data.NATS_REPLICAS !== undefined)!;
    expect(config.data.NATS_REPLICAS).toBe('3');
    const secret = ofKind<StringData>(objects, 'Secret').find((s) => !s.metadata.annotations?.['helm.sh/hook'])!;
    expect(secret.stringData.NATS_URL!.split(',')).toEqual([0, 1, 2].map((i) => `nats://nats-${i}.nats-headless:4222`));
  });

  it('runs two replicas of every service (or an HPA from two), on different nodes, each with a PodDisruptionBudget', async () => {
    const objects = await render('ha-values.yaml');
    const hpas = ofKind<KubeObject & { spec: { scaleTargetRef: { name: string }; minReplicas: number } }>(objects, 'HorizontalPodAutoscaler');
    const deployments = ofKind<Workload>(objects, 'Deployment');
    expect(deployments.map(serviceOf).sort()).toEqual(SERVICES);
    for (const d of deployments) {
      const hpa = hpas.find((h) => h.spec.scaleTargetRef.name === d.metadata.name);
      expect(hpa?.spec.minReplicas ?? d.spec.replicas, d.metadata.name).toBeGreaterThanOrEqual(2);
      expect(d.spec.template.spec.topologySpreadConstraints?.map((t) => t.topologyKey), d.metadata.name).toEqual(['kubernetes.io/hostname']);
    }
    const pdbs = ofKind<KubeObject & { spec: { maxUnavailable: number } }>(objects, 'PodDisruptionBudget');
    expect(pdbs.map(serviceOf).sort()).toEqual(SERVICES);
    for (const p of pdbs) expect(p.spec.maxUnavailable, p.metadata.name).toBe(1);
  });

  it('reads DATABASE_URL from the Secret CloudNativePG makes (key uri), in every service and the migrations Job', async () => {
    const objects = await render('ha-values.yaml');
    const workloads = [...ofKind<Workload>(objects, 'Deployment').filter((d) => !d.metadata.name.endsWith('-gateway')), ...ofKind<Workload>(objects, 'Job')];
    expect(workloads).toHaveLength(SERVICES.length);
    for (const w of workloads) {
      for (const c of w.spec.template.spec.containers) {
        expect(c.env?.find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef, w.metadata.name).toEqual({ name: 'exchange-db-app', key: 'uri' });
      }
    }
    // No Secret of the chart carries a Postgres URL: CloudNativePG's is the only one.
    expect(JSON.stringify(ofKind(objects, 'Secret'))).not.toMatch(/postgres(ql)?:\/\//);
  });

  it('lets the nodes of the NATS cluster and the Postgres instances reach one another through the NetworkPolicies', async () => {
    type Policy = KubeObject & { spec: { podSelector: { matchLabels: Record<string, string> }; ingress: { from?: { podSelector?: { matchLabels: Record<string, string> } }[]; ports?: unknown[] }[] } };
    const policies = ofKind<Policy>(await render('ha-values.yaml'), 'NetworkPolicy');
    for (const [suffix, members] of [['nats-clients', { 'app.kubernetes.io/name': 'nats' }], ['postgres-clients', { 'cnpg.io/cluster': 'exchange-db' }]] as const) {
      const policy = policies.find((p) => p.metadata.name.endsWith(`-${suffix}`))!;
      expect(policy.spec.podSelector.matchLabels).toEqual(members);
      expect(policy.spec.ingress).toContainEqual({ from: [{ podSelector: { matchLabels: members } }] });
    }
  });

  it.each([
    ['ci/minimal-values.yaml', '1'],
    ['ci/external-values.yaml', '3'],
    ['ci/production-values.yaml', '3'], // the chart's default
    ['ci/ha-values.yaml', '3'],
    ['deploy/tilt/dev-values.yaml', '1'],
  ])('gives %s the replica count of the NATS it pairs with (%s)', async (file, replicas) => {
    const objects = await render(file.startsWith('ci/') ? file.slice('ci/'.length) : join(repoRoot, file));
    const config = ofKind<Data>(objects, 'ConfigMap').find((c) => c.data.NATS_REPLICAS !== undefined)!;
    expect(config.data.NATS_REPLICAS).toBe(replicas);
  });

});
