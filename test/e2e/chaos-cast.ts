import { randomUUID } from 'node:crypto';
import { generateSigningKey, type Outcome } from '@agent-exchange/client';
import type { TransactionStatus, TransactionView } from '@aex/contracts';
import { ADMIN_TOKEN, uniqueEmail } from './harness.js';
import { serviceBody } from './transaction-kit.js';
import type { Creds, Traffic } from './chaos-traffic.js';

// The parties of one chaos worker, made through the gateways with keyed requests like the load itself,
// and what the worker remembers: the purchases it made and the state each must end in, the money it
// put in and took out, how long each purchase took to hold its price.

export interface Member extends Creds {
  id: string;
  accountId: string;
  apiKey: string;
  secretKey: string;
  /** The account's owner agent (D10.3: it decides approvals). */
  owner: Creds;
}

export const OPERATOR: Creds = { adminToken: ADMIN_TOKEN };
export const PRICE = 500;

/** What one worker made and saw. */
export interface Ledger {
  /** Each purchase and the statuses it may end in once the load has drained. */
  expected: Map<string, TransactionStatus[]>;
  /** Cents funded and paid out, once per key whose outcome was a success (D13.3). */
  fundedCents: number;
  paidOutCents: number;
  /** Direct purchases: when the request was sent and when its price was seen held. */
  /** Purchases held: when sent, when held, and whether sent with an Idempotency-Key (bound in a replicated bucket first, D5.6). */
  holds: Array<{ id: string; sent: number; held: number; keyed: boolean }>;
  /** The flows run, by kind. */
  flows: string[];
}

export const newLedger = (): Ledger => ({ expected: new Map(), fundedCents: 0, paidOutCents: 0, holds: [], flows: [] });

export interface Worker {
  t: Traffic;
  n: number;
  provider: Member;
  consumer: Member;
  /** A buyer whose account asks its owner to approve every purchase (D10.3). */
  approving: Member;
  fixed: string;
  negotiable: string;
  ledger: Ledger;
  random: () => number;
}

/** The data of a success, or null with the failure kept as a violation. */
export function must<T>(t: Traffic, o: Outcome<T>, what: string): T | null {
  if (o.ok) return o.data;
  t.violation(`${what}: ${o.status} ${o.error.code} ${o.error.message}`.slice(0, 300));
  return null;
}

/** An account with its owner agent and one agent holding a signing key, each made with a key (D5.5). */
export async function signUp(t: Traffic, name: string): Promise<Member | null> {
  // The body made once: a key's retries send the same body (another body under the key is 422, D5.5).
  const body = { accountType: 'individual' as const, email: uniqueEmail(), displayName: name, agent: { name: 'owner' } };
  const acc = must(t, await t.keyed('sign-up', (via, key) => via({}).createAccount(body, { idempotencyKey: key })), 'sign-up');
  if (!acc) return null;
  const owner = { apiKey: acc.apiKey };
  const keys = generateSigningKey();
  const agent = must(t, await t.keyed('agent', (via, key) => via(owner).createAgent({ name, agentType: 'persistent', signingKeyPublic: keys.publicKey }, { idempotencyKey: key })), 'create agent');
  if (!agent) return null;
  return { id: agent.id, accountId: acc.id, apiKey: agent.apiKey, secretKey: keys.secretKey, owner };
}

/** Funds `m` with a key sent to both gateways at once: one session, the same answer to both (D5.5). */
export async function fundTwice(w: Worker, m: Member, cents: number): Promise<boolean> {
  const key = randomUUID();
  const [a, b] = await Promise.all([0, 1].map((g) => w.t.keyed('fund', (via, k) => via(m).fund(m.id, cents, { idempotencyKey: k }), { key, gateway: g })));
  const ok = must(w.t, a!, 'fund') !== null;
  if (ok) w.ledger.fundedCents += cents;
  const ids = [a!, b!].map((o) => (o.ok ? o.data.sessionId : `${o.status}`));
  if (ids[0] !== ids[1]) w.t.violation(`fund: one key sent to both gateways answered ${ids.join(' and ')}`);
  return ok;
}

/** A worker's cast: a provider selling a fixed-price and a negotiable service, a funded buyer, an approving buyer. */
export async function castWorker(t: Traffic, n: number, random: () => number): Promise<Worker> {
  const [provider, consumer, approving] = await Promise.all(['provider', 'consumer', 'approving'].map((r) => signUp(t, `${r}-${n}`)));
  if (!provider || !consumer || !approving) throw new Error(`worker ${n}'s cast was not made: ${t.violations.join('; ')}`);
  const seller = t.client(n % 2, provider);
  const fixed = must(t, await seller.createService(serviceBody({ pricing: { model: 'fixed', basePriceCents: PRICE } })), 'fixed service');
  const negotiable = must(t, await seller.createService(serviceBody({ pricing: { model: 'negotiable', basePriceCents: 800, minimumCents: 100, maximumCents: 3000 } })), 'negotiable service');
  const asks = await t.client(n % 2, approving.owner).setAccountDelegation(approving.accountId, { requireHumanApprovalAboveCents: 100 });
  if (!fixed || !negotiable || !must(t, asks, 'approval rule')) throw new Error(`worker ${n}'s services were not made: ${t.violations.join('; ')}`);
  const w: Worker = { t, n, provider, consumer, approving, fixed: fixed.id, negotiable: negotiable.id, ledger: newLedger(), random };
  for (const m of [consumer, approving]) if (!(await fundTwice(w, m, 200_000))) throw new Error(`worker ${n}'s buyers were not funded`);
  return w;
}

/** Reads the purchase until its status is one of `statuses`, or `boundMs` passes: its status then. */
export async function waitFor(w: Worker, by: Creds, id: string, statuses: TransactionStatus[], boundMs = 60_000): Promise<TransactionView | null> {
  const deadline = Date.now() + boundMs;
  let last: TransactionView | null = null;
  while (Date.now() < deadline) {
    const o = await w.t.read((via) => via(by).getTransaction(id), Math.max(1000, deadline - Date.now()));
    if (o.ok) {
      last = o.data;
      if (statuses.includes(o.data.status)) return o.data;
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  w.t.violation(`purchase ${id} not ${statuses.join('/')} within ${boundMs / 1000} s: ${last?.status ?? 'unread'}`);
  return null;
}
