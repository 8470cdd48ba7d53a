import { expect } from 'vitest';
import { ExchangeClient, generateSigningKey, unwrap } from '@agent-exchange/client';
import type { TransactionStatus } from '@aex/contracts';
import { eventually } from '@aex/platform/testing';
import { platformFee } from '@aex/transactions';
import { signingMember } from './harness.js';
import { serviceBody } from './transaction-kit.js';

// The reference model of transaction-model.test.ts: the exchange as the test expects it to be
// (transactions, wallets, child agents and their accounts), its seeded random generator, the run's
// size, its cast, and what every run must cover. The test predicts each request's answer from the
// model and compares the exchange with it.

export const OPS = Number(process.env.MODEL_OPS ?? 400);
export const KILLS = Number(process.env.MODEL_KILLS ?? 2);
export const SEED = Number(process.env.MODEL_SEED ?? 20261123);
/** Agents 0–3 buy from each other; 4 sells only the short-lived service and 5 only buys it (their expiries touch nobody else). */
export const AGENTS = 4;
export const SHORT_PROVIDER = 4;
export const SHORT_CONSUMER = 5;
const OPENING = 20_000;
/** D6.4: active agents per account, children included (each main agent's account has its owner and it). */
export const AGENT_LIMIT = 20;
/**
 * D10.3: the accounts of agents 2 and 3 ask their owner to approve any price above this (account
 * defaults, which their children's rules start from); agents 0, 1, 4 and 5 buy without approvals.
 */
const APPROVAL_ABOVE = 300;
export const APPROVING = [2, 3];

/** mulberry32: a small seeded generator, so a failing run can be replayed with MODEL_SEED. */
export function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]! };
}

export interface Agent { id: string; apiKey: string; secretKey: string; fixed: { id: string; price: number }; negotiable: string; short: string; metered: { id: string; unit: number }; ownerApiKey: string }
/** Whoever buys: the main agents (indexes 0–5, as `agents`) and the children spawned by agents 0–3 (D6.8). */
export interface Party { id: string; apiKey: string; secretKey: string; parent: number | null; expired: boolean }
export interface ModelTx {
  id: string; consumer: number; provider: number; status: TransactionStatus; price: number | null;
  offer: number; lastFrom: number; rounds: number; attempts: number; short: boolean;
  /** D12: disputed once at most; the part refunded by a partial refund. */
  dispute: { id: string; status: 'open' | 'escalated' | 'resolved' } | null; refund: number;
  /** D17.1: a metered purchase: its most units and their unit price (the price of `maxUnits` is held; `price` is the used units' once delivered). */
  metered?: { maxUnits: number; unit: number };
  /** D17.5: a call in this prepaid session: nothing held of its own, its reservation in the session's. */
  session?: string;
}

/** D17.4: a prepaid session of a main agent's, on a provider's fixed or metered service (`unit`: its unit price). */
export interface ModelSession { id: string; consumer: number; provider: number; budget: number; closing: boolean; metered?: number }

export const TERMINAL: TransactionStatus[] = ['settled', 'cancelled', 'expired', 'failed'];
const HOLDING: TransactionStatus[] = ['funds_held', 'executing', 'validation_failed', 'delivered', 'disputed'];
/** What a purchase holds until it ends (a metered one the price of its most units), or a session call reserves. */
const reservation = (t: ModelTx) => (t.metered ? t.metered.maxUnits * t.metered.unit : t.price!);

export class Model {
  readonly txs = new Map<string, ModelTx>();
  readonly parties: Party[] = [];
  /** What moved into (+) or out of (−) each party's wallet besides transactions: funding, budgets, returns. */
  readonly moved: number[] = [];
  readonly sessions = new Map<string, ModelSession>();

  wallet(i: number) {
    let balance = this.moved[i]!;
    let held = 0;
    for (const t of this.txs.values()) {
      // D12.8: a partial refund pays only the rest, with the fee on the rest.
      const paid = t.price! - t.refund;
      if (t.status === 'settled' && t.consumer === i) balance -= paid;
      if (t.status === 'settled' && t.provider === i) balance += paid - platformFee(paid);
      if (HOLDING.includes(t.status) && t.consumer === i && !t.session) held += reservation(t);
    }
    // D17.4–D17.7: a session holds its budget less what its calls spent, until it closes and returns the rest.
    for (const s of this.sessions.values()) if (s.consumer === i && this.session(s).status !== 'closed') held += s.budget - this.session(s).spent;
    return { balanceCents: balance, heldCents: held };
  }

  /** A session as the exchange should show it: every calls' money accounted for, budget = spent + reserved + remaining + returned. */
  session(s: ModelSession) {
    const calls = [...this.txs.values()].filter((t) => t.session === s.id);
    const spent = calls.filter((t) => t.status === 'settled').reduce((sum, t) => sum + t.price!, 0);
    const reserved = calls.filter((t) => !TERMINAL.includes(t.status)).reduce((sum, t) => sum + reservation(t), 0);
    const status = !s.closing ? 'open' : calls.some((t) => !TERMINAL.includes(t.status)) ? 'closing' : 'closed';
    const returned = status === 'closed' ? s.budget - spent : 0;
    return { status, spent, reserved, returned, remaining: s.budget - spent - reserved - returned, calls: calls.length };
  }

  available = (i: number) => {
    const w = this.wallet(i);
    return w.balanceCents - w.heldCents;
  };

  active = (i: number) => [...this.txs.values()].filter((t) => (t.consumer === i || t.provider === i) && !TERMINAL.includes(t.status)).length;

  /** The main agent whose account the party is of (a child is of its parent's). */
  accountOf = (i: number) => this.parties[i]!.parent ?? i;

  /** D10.3: whether the party's price waits for its owner's approval. */
  needsApproval = (i: number, price: number) => APPROVING.includes(this.accountOf(i)) && price > APPROVAL_ABOVE;

  /** D6.4: the agents of `parent`'s account that are active — the owner, the agent and its live children. */
  agentsOfAccount = (parent: number) => 2 + this.parties.filter((c) => c.parent === parent && !c.expired).length;

  /** D6.8: what is available in an expired child's wallet belongs to its parent (returned in the same step). */
  sweep(): void {
    this.parties.forEach((c, i) => {
      const a = this.available(i);
      if (!c.expired || c.parent === null || a <= 0) return;
      this.moved[i]! -= a;
      this.moved[c.parent]! += a;
    });
  }
}

/** What the model expects of one request: its status code and, when it succeeds, what changes. */
export interface Expectation { status: number; apply?: (answer?: { id: string } | null, details?: Record<string, unknown>) => void }

/**
 * The cast, made through the exchange at `url`: agents 0–5, each with an account of its own, a
 * signing key, OPENING cents and four services for sale (fixed-price, negotiable, short-lived, metered); the
 * accounts of APPROVING ask their owner to approve prices above APPROVAL_ABOVE. Each joins the model.
 */
export async function castOf(url: string, model: Model): Promise<Agent[]> {
  const agents: Agent[] = [];
  for (let i = 0; i < AGENTS + 2; i++) {
    const made = await signingMember(new ExchangeClient({ baseUrl: url }), `agent-${i}`);
    const a = { id: made.id, apiKey: made.apiKey, secretKey: made.secretKey } as Agent;
    const c = made.client;
    a.ownerApiKey = made.ownerApiKey;
    const owner = new ExchangeClient({ baseUrl: url, apiKey: a.ownerApiKey, timeoutMs: 20_000 });
    if (APPROVING.includes(i)) unwrap(await owner.setAccountDelegation(made.accountId, { requireHumanApprovalAboveCents: APPROVAL_ABOVE }));
    unwrap(await c.fund(a.id, OPENING));
    const price = 100 * (i + 1) + 37;
    a.fixed = { id: unwrap(await c.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: price } }))).id, price };
    a.negotiable = unwrap(await c.createService(serviceBody({ pricing: { model: 'negotiable', basePriceCents: 800, minimumCents: 100, maximumCents: 3000 } }))).id;
    a.short = unwrap(await c.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: 50 }, sla: { maxLatencyMs: 300, timeoutMs: 600 } }))).id;
    a.metered = { id: unwrap(await c.createService(serviceBody({ pricing: { model: 'per_unit', basePriceCents: 10 + i, unit: 'page' } }))).id, unit: 10 + i };
    agents.push(a);
    model.parties.push({ id: a.id, apiKey: a.apiKey, secretKey: a.secretKey, parent: null, expired: false });
    model.moved.push(OPENING);
  }
  return agents;
}

/** A new child registers a signing key to call the signed routes (its key works once its budget is moved). */
export async function registerKey(url: string, child: Party): Promise<void> {
  const keys = generateSigningKey();
  child.secretKey = keys.secretKey;
  let lastErr = '';
  await eventually(async () => {
    const r = await new ExchangeClient({ baseUrl: url, apiKey: child.apiKey }).updateAgent(child.id, { signingKeyPublic: keys.publicKey });
    if (!r.ok) lastErr = JSON.stringify(r.error.errors);
    return r.ok || null;
  }, 30_000, 100).catch((e) => { throw new Error(`${e} ${lastErr}`); });
}

/**
 * What every run covers, whatever its seed: enough transactions, ending in several statuses; disputes
 * opened and resolved; children spawned, buying and expired; approvals; races of more than one kind.
 * `tally` counts each kind of operation by its answer, and is printed when a check fails.
 */
export function expectCoverage(model: Model, tally: Map<string, number>): void {
  const seen = JSON.stringify(Object.fromEntries([...tally].sort()));
  expect(model.txs.size, seen).toBeGreaterThan(OPS / 8);
  // The disputes went each way: opened, and resolved by the provider, the consumer and the operator.
  const disputes = [...model.txs.values()].filter((t) => t.dispute);
  expect(disputes.length, seen).toBeGreaterThan(OPS / 200);
  expect(disputes.filter((t) => t.dispute!.status === 'resolved').length, seen).toBeGreaterThan(0);
  const byStatus: Record<string, number> = {};
  for (const t of model.txs.values()) byStatus[t.status] = (byStatus[t.status] ?? 0) + 1;
  expect(Object.keys(byStatus).length, JSON.stringify(byStatus)).toBeGreaterThanOrEqual(5);
  // Children were spawned, bought, and expired (D6.8).
  const kids = model.parties.filter((c) => c.parent !== null);
  expect(kids.length, seen).toBeGreaterThan(OPS / 200);
  expect(kids.filter((c) => c.expired).length, seen).toBeGreaterThan(0);
  expect([...model.txs.values()].filter((t) => t.consumer >= AGENTS + 2).length, seen).toBeGreaterThan(0);
  // Purchases waited for their owner's approval, and were approved (D10.3).
  expect([...tally.keys()].filter((k) => k.startsWith('approve 200')).length, seen).toBeGreaterThan(0);
  expect([...tally.keys()].some((k) => k === 'create 202' || k.startsWith('approve ')), seen).toBe(true);
  // Metered purchases were made (D17.1).
  expect([...model.txs.values()].filter((t) => t.metered).length, seen).toBeGreaterThan(0);
  // Sessions were opened, paid calls, and closed with the rest returned (D17.4–D17.7).
  const sessions = [...model.sessions.values()].map((x) => model.session(x));
  expect(sessions.filter((x) => x.status === 'closed' && x.spent > 0).length, seen).toBeGreaterThan(0);
  expect([...model.txs.values()].filter((t) => t.session && t.status === 'settled').length, seen).toBeGreaterThanOrEqual(OPS / 100);
  // The races ran, of more than one kind (D9.14).
  expect([...tally.keys()].filter((k) => k.startsWith('race ')).length, seen).toBeGreaterThanOrEqual(2);
}
