import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { names } from '@aex/contracts';
import { database as catalogDatabase } from '@aex/catalog';
import { database as identityDatabase } from '@aex/identity';
import { database as transactionsDatabase } from '@aex/transactions';
import { database as walletDatabase } from '@aex/wallet';
import { database as webhooksDatabase } from '@aex/webhooks';
import { connectServiceDb, freePort } from '@aex/platform';
import { NatsCluster, testLogger, testNamespace } from '@aex/platform/testing';
import { startEmbeddedPostgres, type Started } from '@aex/stack';
import { ADMIN_TOKEN, spawnMain, stopProcess, type SpawnedProcess } from './harness.js';

// The exchange in its deployed shape, on one machine: a three-node NATS JetStream cluster, a Postgres
// of its own (a private embedded one, so that freezing it stalls no other test), and every service as
// separate processes, two replicas each, started from their own main.ts with environment variables
// only. Each replica can be killed (SIGKILL) and started again; NATS nodes and Postgres can fail too.
// What was faulted, and when, is kept: chaos.test.ts judges each answer against it.

export const SERVICES = ['identity', 'wallet', 'catalog', 'transactions', 'webhooks', 'gateway'] as const;
export type ServiceName = (typeof SERVICES)[number];
export const REPLICAS = 2;
const START_MS = 240_000;
/** How many times a replica whose start fails is started (Kubernetes would go on restarting it). */
const START_ATTEMPTS = 3;

const READY: Record<ServiceName, RegExp> = {
  identity: /identity service started/,
  wallet: /wallet service started/,
  catalog: /catalog service started/,
  transactions: /transactions service started/,
  webhooks: /webhooks service started/,
  gateway: /"url":"(http:\/\/[^"]+)"[^\n]*gateway listening/,
};

/** One fault as it happened: what, from when until it was healed (null while it lasts). */
export interface Fault {
  kind: 'replica' | 'service' | 'nats' | 'postgres';
  /** The faulted service (replica and service faults). */
  service?: ServiceName;
  /** The replica (replica faults). */
  replica?: number;
  label: string;
  from: number;
  to: number | null;
}

interface Replica {
  service: ServiceName;
  index: number;
  env: Record<string, string>;
  proc: SpawnedProcess | null;
  /** Every run's output, for a failure's report. */
  runs: Array<() => string>;
}

/** The processes of a Postgres cluster: the postmaster (from its pid file) and its children. */
export function postgresPids(dataDir: string): number[] {
  const postmaster = Number.parseInt(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]!, 10);
  const children = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number).filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
    } catch {
      return false;
    }
  });
  return [postmaster, ...children];
}

export class Deployment {
  readonly faults: Fault[] = [];
  private readonly replicas: Replica[] = [];
  private frozen: number[] = [];

  private constructor(
    readonly nats: NatsCluster,
    private readonly postgres: Started,
    private readonly dataDir: string,
    readonly databaseUrl: string,
    readonly namespace: string,
    /** The gateways' fixed addresses: a restarted gateway listens where it did, as behind a load balancer. */
    readonly gateways: string[],
  ) {}

  /**
   * Starts the cluster, Postgres (every service's schema migrated once, before any replica starts) and
   * two replicas of every service. `env` adds to every process's environment.
   */
  static async start(env: Record<string, string> = {}): Promise<Deployment> {
    const dataDir = mkdtempSync(join(tmpdir(), 'aex-chaos-'));
    // As root, Postgres runs as its own system user, which must reach the directory.
    chmodSync(dataDir, 0o755);
    const nats = await NatsCluster.start(3);
    const postgres = await startEmbeddedPostgres(dataDir, testLogger()).catch(async (err: unknown) => {
      await nats.stop();
      throw err;
    });
    const namespace = testNamespace();
    const ports = await Promise.all(Array.from({ length: REPLICAS }, () => freePort()));
    const dep = new Deployment(nats, postgres, dataDir, postgres.url, namespace, ports.map((p) => `http://127.0.0.1:${p}`));
    const common = {
      DATABASE_URL: postgres.url,
      NATS_URL: nats.url,
      NATS_REPLICAS: '3',
      BUS_NAMESPACE: namespace,
      ADMIN_TOKEN,
      PAYMENTS_PROVIDER: 'sandbox',
      DISCOVERY_MEANING: 'false',
      // A long run spawns a child per spawn flow, each active for its lifetime: more than D6.4's 20 per
      // account, which the children tests check on their own.
      MAX_AGENTS_PER_ACCOUNT: '1000',
      // info: the line each main prints once it is ready (what the start waits for).
      LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'info',
      LOG_FORMAT: 'json',
      ...env,
    };
    for (const service of SERVICES) {
      for (let index = 0; index < REPLICAS; index++) {
        const own: Record<string, string> = service === 'gateway' ? { PORT: String(ports[index]) } : {};
        dep.replicas.push({ service, index, env: { ...common, ...own }, proc: null, runs: [] });
      }
    }
    try {
      // Every schema migrated once, before any replica starts (as the chart's migrations Job does).
      for (const d of [identityDatabase, walletDatabase, transactionsDatabase, catalogDatabase, webhooksDatabase]) {
        await (await connectServiceDb({ url: postgres.url, ...d })).close();
      }
      // The back-end services first (their streams and consumers), then the gateways; the replicas of
      // a tier in parallel. A start that fails stops what did start.
      await settleAll(dep.replicas.filter((r) => r.service !== 'gateway').map((r) => dep.startReplica(r)));
      await settleAll(dep.replicas.filter((r) => r.service === 'gateway').map((r) => dep.startReplica(r)));
    } catch (err) {
      await dep.stop();
      throw err;
    }
    return dep;
  }

  private replica(service: ServiceName, index: number): Replica {
    return this.replicas.find((r) => r.service === service && r.index === index)!;
  }

  /**
   * Starts a replica; one whose start fails (a JetStream request timing out on a cold cluster while a
   * dozen processes start on two cores) is started again, as Kubernetes restarts a pod that exited —
   * at most `START_ATTEMPTS` times, each failed run kept in the log.
   */
  private async startReplica(r: Replica): Promise<void> {
    const main = `services/${r.service}/src/main.ts`;
    for (let attempt = 1; ; attempt++) {
      const head = `--- ${r.service}#${r.index}, run ${r.runs.length + 1}, started ${new Date().toISOString()} ---`;
      try {
        // A loaded machine (a dozen Node processes on two cores) starts a replica slowly.
        const proc = await spawnMain(main, r.env, READY[r.service], START_MS);
        r.proc = proc;
        r.runs.push(() => `${head}\n${proc.output()}`);
        return;
      } catch (err) {
        r.runs.push(() => `${head}\n${String((err as Error).message)}`);
        if (attempt === START_ATTEMPTS || !/ exited with /.test(String((err as Error).message))) throw err;
        await sleep(1_000);
      }
    }
  }

  private async killReplica(r: Replica): Promise<void> {
    if (r.proc) await stopProcess(r.proc.child, 'SIGKILL');
    r.proc = null;
  }

  private open(fault: Omit<Fault, 'from' | 'to'>): Fault {
    const f: Fault = { ...fault, from: Date.now(), to: null };
    this.faults.push(f);
    return f;
  }

  /** kill -9 of one replica, started again after `downMs`; resolves once it is ready again. */
  async killOne(service: ServiceName, index: number, downMs: number): Promise<void> {
    const f = this.open({ kind: 'replica', service, replica: index, label: `kill -9 ${service}#${index}` });
    await this.killReplica(this.replica(service, index));
    await sleep(downMs);
    await this.startReplica(this.replica(service, index));
    f.to = Date.now();
  }

  /** kill -9 of both replicas of a service, started again after `downMs`. */
  async killBoth(service: ServiceName, downMs: number): Promise<void> {
    const f = this.open({ kind: 'service', service, label: `kill -9 both ${service} replicas` });
    const both = this.replicas.filter((r) => r.service === service);
    await Promise.all(both.map((r) => this.killReplica(r)));
    await sleep(downMs);
    await Promise.all(both.map((r) => this.startReplica(r)));
    f.to = Date.now();
  }

  /**
   * kill -9 of the NATS node that leads `stream` (`commands`, `events`, or a KV bucket's purpose such
   * as `rate_limits`), started again after `downMs`.
   */
  async killNatsLeader(stream: string, downMs: number): Promise<string> {
    const node = await this.leaderOf(stream);
    const f = this.open({ kind: 'nats', label: `kill -9 NATS ${node} (leader of ${stream})` });
    await this.nats.kill(node);
    await sleep(downMs);
    await this.nats.restart(node);
    f.to = Date.now();
    return node;
  }

  /** The node leading a stream of the namespace (`commands`, `events`, or a KV bucket's purpose), or the first node if none does. */
  async leaderOf(stream: string): Promise<string> {
    const name = stream === 'commands' ? names.commandsStream(this.namespace)
      : stream === 'events' ? names.eventsStream(this.namespace)
        : `KV_${names.bucket(this.namespace, stream)}`;
    const found = (await this.nats.streams()).find((s) => s.name === name);
    return found?.leader ?? this.nats.nodes[0]!.name;
  }

  /** The copies each of the namespace's streams and KV buckets keeps, as JetStream reports them. */
  async streamReplicas(): Promise<Record<string, number>> {
    const mine = (n: string) => n.startsWith(`${this.namespace.toUpperCase()}_`) || n.startsWith(`KV_${this.namespace}_`);
    return Object.fromEntries((await this.nats.streams()).filter((s) => mine(s.name)).map((s) => [s.name, s.replicas]));
  }

  /** SIGSTOP of every Postgres process for `ms`, then SIGCONT: a database that stops answering and comes back. */
  async freezePostgres(ms: number): Promise<void> {
    const f = this.open({ kind: 'postgres', label: `Postgres frozen ${ms} ms` });
    this.frozen = postgresPids(this.dataDir);
    for (const pid of this.frozen) process.kill(pid, 'SIGSTOP');
    await sleep(ms);
    this.thawPostgres();
    f.to = Date.now();
  }

  private thawPostgres(): void {
    for (const pid of this.frozen) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // Gone meanwhile: nothing to thaw.
      }
    }
    this.frozen = [];
  }

  /** What every replica printed, every run of it: what a failing run shows. */
  log(): string {
    return this.replicas.flatMap((r) => r.runs.map((run) => run())).join('\n');
  }

  async stop(): Promise<void> {
    this.thawPostgres();
    await Promise.all(this.replicas.map((r) => this.killReplica(r)));
    await this.nats.stop();
    await this.postgres.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** Waits for every start, then throws the first failure (none is left running unawaited). */
async function settleAll(starts: Promise<void>[]): Promise<void> {
  const failed = (await Promise.allSettled(starts)).find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
}

/** A pause in a fault's schedule: how long a thing stays down is the fault itself, not a wait for an event. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
