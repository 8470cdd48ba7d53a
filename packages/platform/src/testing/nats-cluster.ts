import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import { freePort } from '../net/free-port.js';

/** One node of a test cluster: its client port, and whether it runs now. */
export interface ClusterNode {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  running(): boolean;
}

/**
 * A NATS JetStream cluster of `size` nodes on loopback, each its own `nats-server` process with its own
 * store, as a platform team deploys it (three nodes, routes between them). Nodes can be killed
 * (`kill -9`), frozen (`SIGSTOP`) and started again on the same port and store. `url` lists every
 * node, comma-separated, as NATS_URL takes it.
 */
export class NatsCluster {
  private readonly children = new Map<string, ChildProcess>();

  private constructor(
    readonly nodes: ClusterNode[],
    private readonly dir: string,
    private readonly configs: Map<string, string>,
  ) {}

  get url(): string {
    return this.nodes.map((n) => n.url).join(',');
  }

  /**
   * Starts `size` nodes and waits until the cluster can place a stream on every one of them. A start
   * that does not get there (a node whose port was taken meanwhile) is stopped and made again on
   * other ports.
   */
  static async start(size = 3): Promise<NatsCluster> {
    for (let attempt = 1; ; attempt++) {
      const cluster = await NatsCluster.startOnce(size);
      try {
        await cluster.ready();
        return cluster;
      } catch (err) {
        await cluster.stop();
        if (attempt === 3) throw err;
      }
    }
  }

  private static async startOnce(size: number): Promise<NatsCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'aex-nats-cluster-'));
    const drawn = new Set<number>();
    // One at a time, each distinct: ports drawn at once may be handed out twice.
    const distinct = async () => {
      for (;;) {
        const port = await freePort();
        if (!drawn.has(port)) return drawn.add(port), port;
      }
    };
    const ports: Array<{ client: number; route: number }> = [];
    for (let i = 0; i < size; i++) ports.push({ client: await distinct(), route: await distinct() });
    const configs = new Map<string, string>();
    const nodes: ClusterNode[] = [];
    const cluster: NatsCluster = new NatsCluster(nodes, dir, configs);
    ports.forEach((p, i) => {
      const name = `n${i + 1}`;
      const routes = ports.filter((_, j) => j !== i).map((q) => `nats-route://127.0.0.1:${q.route}`);
      const file = join(dir, `${name}.conf`);
      writeFileSync(file, [
        `server_name: ${name}`,
        `listen: 127.0.0.1:${p.client}`,
        `jetstream { store_dir: "${join(dir, name)}", max_memory_store: 256MB, max_file_store: 2GB }`,
        `cluster { name: aex-test, listen: 127.0.0.1:${p.route}, routes: [${routes.join(', ')}] }`,
      ].join('\n'));
      configs.set(name, file);
      nodes.push({ name, port: p.client, url: `nats://127.0.0.1:${p.client}`, running: () => cluster.isRunning(name) });
    });
    for (const n of nodes) cluster.startNode(n.name);
    return cluster;
  }

  private isRunning(name: string): boolean {
    const child = this.children.get(name);
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  private startNode(name: string): void {
    const child = spawn('nats-server', ['-c', this.configs.get(name)!], { stdio: 'ignore' });
    this.children.set(name, child);
  }

  private node(name: string): ClusterNode {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  /**
   * Resolves once JetStream answers with a meta leader and every running node is in the cluster: a
   * stream with one copy on each running node can be made (and is deleted again).
   */
  async ready(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < deadline) {
      const nc = await connect({ servers: this.nodes.filter((n) => n.running()).map((n) => n.url), timeout: 1_000 }).catch((err: unknown) => {
        last = err;
        return null;
      });
      if (nc) {
        try {
          const jsm = await jetstreamManager(nc, { timeout: 2_000 });
          await jsm.getAccountInfo();
          const probe = `READY_${Math.random().toString(36).slice(2)}`;
          await jsm.streams.add({ name: probe, subjects: [`ready.${probe}`], num_replicas: this.nodes.filter((n) => n.running()).length, storage: StorageType.Memory });
          await jsm.streams.delete(probe).catch(() => undefined);
          return;
        } catch (err) {
          last = err;
        } finally {
          await nc.close().catch(() => undefined);
        }
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`the NATS cluster was not ready within ${timeoutMs} ms: ${String((last as Error)?.message ?? last)}`);
  }

  /** The node leading a stream (`KV_<bucket>` for a KV bucket) and the copies it keeps, as JetStream reports them. */
  async streamLeader(stream: string): Promise<{ leader: string | undefined; replicas: number }> {
    const nc = await connect({ servers: this.nodes.filter((n) => n.running()).map((n) => n.url), timeout: 1_000 });
    try {
      const info = await (await jetstreamManager(nc)).streams.info(stream);
      return { leader: info.cluster?.leader, replicas: info.config.num_replicas };
    } finally {
      await nc.close().catch(() => undefined);
    }
  }

  /**
   * Every JetStream stream of the cluster (KV buckets are streams named `KV_<bucket>`): how many
   * copies it keeps and which node leads it now (null while it has no leader).
   */
  async streams(): Promise<Array<{ name: string; replicas: number; leader: string | null }>> {
    const nc = await connect({ servers: this.nodes.filter((n) => n.running()).map((n) => n.url), timeout: 2_000 });
    try {
      const jsm = await jetstreamManager(nc, { timeout: 5_000 });
      const found: Array<{ name: string; replicas: number; leader: string | null }> = [];
      for await (const s of jsm.streams.list()) found.push({ name: s.config.name, replicas: s.config.num_replicas, leader: s.cluster?.leader ?? null });
      return found;
    } finally {
      await nc.close();
    }
  }

  /** `kill -9` of one node; its store stays for `restart`. */
  async kill(name: string): Promise<void> {
    const child = this.children.get(name);
    if (!child || !this.isRunning(name)) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  /** Freezes a node (SIGSTOP): its connections stay open and nothing answers. */
  freeze(name: string): void {
    this.children.get(name)?.kill('SIGSTOP');
  }

  thaw(name: string): void {
    this.children.get(name)?.kill('SIGCONT');
  }

  /** Starts a killed node again, on its port and store. */
  async restart(name: string): Promise<void> {
    this.node(name);
    if (this.isRunning(name)) return;
    this.startNode(name);
    await this.ready();
  }

  async stop(): Promise<void> {
    await Promise.all([...this.children.keys()].map((name) => {
      this.thaw(name);
      return this.kill(name);
    }));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
