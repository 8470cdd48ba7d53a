import { expect } from 'vitest';
import type { ExchangeClient, Outcome } from '@agent-exchange/client';
import { eventually } from '@aex/platform/testing';
import { INPUT } from './transaction-kit.js';
import { AGENTS, APPROVING, type Agent, type Expectation, type Model, type Party } from './transaction-model-kit.js';

// The prepaid sessions of transaction-model.test.ts (D17.4–D17.7): opened by main agents on another's
// fixed or metered service, called into (each call a purchase the model follows like any other, its
// price reserved from the session's budget), and closed by either party. The calls take the rest of
// the random operations as any purchase does: delivered (settled at once: sessions are opened with
// autoVerify), delivered badly, started, cancelled, refused what their state or role forbids.

/** Session operations among the random step's kinds (calls drawn most). */
export const SESSION_KINDS = ['openSession', 'sessionCall', 'sessionCall', 'closeSession'] as const;
export type SessionKind = (typeof SESSION_KINDS)[number];
export const isSessionKind = (kind: string): kind is SessionKind => (SESSION_KINDS as readonly string[]).includes(kind);

interface Cast {
  model: Model;
  agents: Agent[];
  r: { next(): number; int(n: number): number; pick<T>(xs: readonly T[]): T };
  client: (p: Party) => ExchangeClient;
}

export interface SessionStep {
  exp: Expectation;
  /** Who sends it (an index of the model's parties). */
  by: number;
  send: (key: string) => Promise<Outcome<{ id: string; status: string }>>;
}

/** One random session operation, its expected answer predicted by the model. */
export function sessionStep(kind: SessionKind, { model, agents, r, client }: Cast): SessionStep {
  const parties = model.parties;
  const known = [...model.sessions.values()];
  if (kind === 'openSession' || known.length === 0) {
    const c = r.int(AGENTS);
    const p = (c + 1 + r.int(AGENTS - 1)) % AGENTS;
    // D10.3 is covered by purchases: an approving account's budgets stay within what it approves
    // itself, spent on the metered service's cheap calls.
    const approving = APPROVING.includes(c);
    const metered = approving || r.next() < 0.3 ? agents[p]!.metered : undefined;
    const budget = approving ? 150 + r.int(151) : 500 + r.int(3001);
    const serviceId = metered ? metered.id : agents[p]!.fixed.id;
    const exp: Expectation = model.available(c) < budget ? { status: 402 } : {
      status: 201,
      apply: (s) => model.sessions.set(s!.id, { id: s!.id, consumer: c, provider: p, budget, closing: false, ...(metered && { metered: metered.unit }) }),
    };
    return { exp, by: c, send: (key) => client(parties[c]!).openSession({ serviceId, budgetCents: budget }, { idempotencyKey: key }) };
  }
  // Mostly an open session: calls into closed ones are refused alike, and a closed one closes again alike.
  const open = known.filter((x) => model.session(x).status === 'open');
  const s = open.length > 0 && r.next() < 0.8 ? r.pick(open) : r.pick(known);
  if (kind === 'closeSession') {
    // Either party; closing one already closing or closed changes nothing (D17.6).
    const by = r.next() < 0.7 ? s.consumer : s.provider;
    return { exp: { status: 200, apply: () => { s.closing = true; } }, by, send: (key) => client(parties[by]!).closeSession(s.id, { idempotencyKey: key }) };
  }
  // D17.5: a call reserves its price (a metered call's, of its maxUnits) from what remains.
  const maxUnits = s.metered ? 1 + r.int(20) : undefined;
  const amount = s.metered ? maxUnits! * s.metered : agents[s.provider]!.fixed.price;
  const now = model.session(s);
  const exp: Expectation = now.status !== 'open' ? { status: 409 } : now.remaining < amount ? { status: 402 } : {
    status: 201,
    apply: (t) => model.txs.set(t!.id, {
      id: t!.id, consumer: s.consumer, provider: s.provider, status: 'funds_held', price: amount, offer: amount, lastFrom: s.consumer, rounds: 1, attempts: 0, short: false,
      dispute: null, refund: 0, session: s.id, ...(s.metered && { metered: { maxUnits: maxUnits!, unit: s.metered } }),
    }),
  };
  return { exp, by: s.consumer, send: (key) => client(parties[s.consumer]!).callInSession(s.id, INPUT, { idempotencyKey: key, ...(maxUnits && { maxUnits }) }) };
}

/** Every session as the model has it, its money adding up: budget = spent + reserved + remaining + returned. */
export async function compareSessions(label: string, model: Model, client: (p: Party) => ExchangeClient): Promise<void> {
  for (const s of model.sessions.values()) {
    const want = model.session(s);
    const reader = client(model.parties[s.consumer]!);
    const read = async () => {
      const got = await reader.getSession(s.id);
      if (!got.ok) throw new Error(`${label}: session ${s.id}: ${got.status} ${JSON.stringify(got.error.errors)}`);
      return got.data;
    };
    const seen = await eventually(async () => {
      const got = await read();
      return got.status === want.status && got.spentCents === want.spent && got.reservedCents === want.reserved ? got : null;
    }, 15_000, 100).catch(read);
    const shown = { status: seen.status, spent: seen.spentCents, reserved: seen.reservedCents, returned: seen.returnedCents, remaining: seen.remainingCents, calls: seen.calls };
    expect([label, s.id, shown]).toEqual([label, s.id, want]);
    expect(seen.spentCents + seen.reservedCents + seen.remainingCents + seen.returnedCents, `${label}: session ${s.id} adds up`).toBe(s.budget);
  }
}
