import { randomUUID } from 'node:crypto';
import { generateSigningKey, type Outcome } from '@agent-exchange/client';
import type { TransactionStatus, TransactionView } from '@aex/contracts';
import { INPUT, OUTPUT } from './transaction-kit.js';
import { fundTwice, must, OPERATOR, PRICE, signUp, waitFor, type Member, type Worker } from './chaos-cast.js';
import type { Creds } from './chaos-traffic.js';

// The flows of the chaos load, each a whole story of one purchase (or of money, or of a sign-up), sent
// through both gateways with keyed requests retried until their outcome is known (D5.5). Each flow says
// what it expects of every answer, and which statuses its purchase may end in: what is wrong is kept as
// a violation, not thrown, so that one run reports everything it found.

const won = (o: Outcome<unknown>) => o.status === 200 || o.status === 201 || o.status === 202;
const lost = (o: Outcome<unknown>) => !o.ok && o.status === 409 && o.error.code === 'INVALID_STATE';
const said = (o: Outcome<unknown>) => (o.ok ? `${o.status} ${(o.data as TransactionView).status}` : `${o.status} ${o.error.code}`);

/** A purchase of the fixed-price service by `buyer`, seen held: its id, with how long holding took. */
async function buy(w: Worker, buyer: Member, keyed = true): Promise<string | null> {
  const sent = Date.now();
  const body = { serviceId: w.fixed, input: INPUT };
  // Without a key: sent once (the gateway makes an operation key; the client repeats an unknown outcome under it).
  const o = keyed
    ? await w.t.keyed('purchase', (via, key) => via(buyer).createTransaction(body, { idempotencyKey: key }))
    : await w.t.once((via) => via(buyer).createTransaction(body));
  const made = must(w.t, o, 'purchase');
  if (!made) return null;
  w.ledger.expected.set(made.id, ['funds_held']);
  const held = made.status === 'funds_held' ? made : await waitFor(w, buyer, made.id, ['funds_held']);
  if (held) w.ledger.holds.push({ id: made.id, sent, held: Date.now(), keyed });
  return held ? made.id : null;
}

const deliver = (w: Worker, id: string) => w.t.keyed('deliver', (via, key) => via(w.provider).deliver(id, { output: OUTPUT }, { idempotencyKey: key }));
const verify = (w: Worker, by: Creds, id: string) => w.t.keyed('verify', (via, key) => via(by).verify(id, { qualityScore: 90 }, { idempotencyKey: key }));
const cancel = (w: Worker, by: Creds, id: string) => w.t.keyed('cancel', (via, key) => via(by).cancel(id, { idempotencyKey: key }));

/** Delivered and verified: settled (D9.9: a 202 settles on its own). */
async function deliverAndVerify(w: Worker, buyer: Creds, id: string): Promise<void> {
  if (!must(w.t, await deliver(w, id), `deliver ${id}`)) return;
  w.ledger.expected.set(id, ['delivered', 'settled']);
  if (!must(w.t, await verify(w, buyer, id), `verify ${id}`)) return;
  w.ledger.expected.set(id, ['settled']);
}

export async function purchase(w: Worker): Promise<void> {
  const id = await buy(w, w.consumer);
  if (id) await deliverAndVerify(w, w.consumer, id);
}

/** D9.14: a delivery racing a cancellation: exactly one makes its move, the other is refused 409. */
export async function deliverRacingCancel(w: Worker): Promise<void> {
  const id = await buy(w, w.consumer);
  if (!id) return;
  const canceller = w.random() < 0.5 ? w.consumer : w.provider;
  const [d, c] = await Promise.all([deliver(w, id), cancel(w, canceller, id)]);
  w.ledger.expected.set(id, ['delivered', 'cancelled', 'settled']);
  if (!((won(d) && lost(c)) || (lost(d) && won(c)))) w.t.violation(`deliver racing cancel: deliver ${said(d)}, cancel ${said(c)}`);
  if (won(d) && !won(c)) {
    if (must(w.t, await verify(w, w.consumer, id), `verify ${id}`)) w.ledger.expected.set(id, ['settled']);
  } else if (won(c)) w.ledger.expected.set(id, ['cancelled']);
}

/** D11: an opening offer on the negotiable service, accepted by the provider, then delivered and verified. */
export async function negotiation(w: Worker): Promise<void> {
  const offer = 400 + Math.floor(w.random() * 600);
  const o = await w.t.keyed('negotiate', (via, key) => via(w.consumer).createTransaction({ serviceId: w.negotiable, input: INPUT, maxPriceCents: offer }, { idempotencyKey: key }));
  const made = must(w.t, o, 'open a negotiation');
  if (!made) return;
  w.ledger.expected.set(made.id, ['negotiating']);
  const a = await w.t.keyed('accept', (via, key) => via(w.provider).negotiate(made.id, { type: 'accept', terms: {} }, { idempotencyKey: key }));
  if (!must(w.t, a, `accept ${made.id}`)) return;
  w.ledger.expected.set(made.id, ['funds_held']);
  if (await waitFor(w, w.consumer, made.id, ['funds_held'])) await deliverAndVerify(w, w.consumer, made.id);
}

/**
 * D10.3 / D9.14: a purchase awaiting its owner's approval; the owner's approve races the owner's deny
 * or the buyer's cancel. Exactly one of approve and deny wins, the other answers 409 INVALID_STATE; a
 * cancel wins over an approve that comes later (409), or cancels what the approve held. An approve
 * that answers success has held the price: it never answers with a cancelled purchase; one answered
 * 202 while its hold is on its way has claimed nothing yet.
 */
export async function approvalRace(w: Worker): Promise<void> {
  const buyer = w.approving;
  const made = must(w.t, await w.t.keyed('approval purchase', (via, key) => via(buyer).createTransaction({ serviceId: w.fixed, input: INPUT }, { idempotencyKey: key })), 'purchase awaiting approval');
  if (!made) return;
  w.ledger.expected.set(made.id, ['awaiting_approval']);
  if (!(await waitFor(w, buyer, made.id, ['awaiting_approval']))) return;
  const denying = w.random() < 0.5;
  const [a, other] = await Promise.all([
    w.t.keyed('approve', (via, key) => via(buyer.owner).approve(made.id, { idempotencyKey: key })),
    denying ? w.t.keyed('deny', (via, key) => via(buyer.owner).deny(made.id, { reason: 'chaos' }, { idempotencyKey: key })) : cancel(w, buyer, made.id),
  ]);
  // An approve answered 202 while its hold is still on its way (the wallet slower than SAGA_WAIT_MS
  // in a fault, D9.9) claims no move yet: a deny or cancel decided after that answer may still end
  // the purchase, sending the hold back, or lose to the approval.
  const pending = a.ok && a.status === 202 && a.data.status === 'awaiting_approval';
  const approved = won(a) && a.ok && a.data.status !== 'cancelled' && !pending;
  const fine = (lost(a) && won(other)) || (approved && (denying ? lost(other) : won(other))) || (pending && (won(other) || lost(other)));
  if (!fine) w.t.violation(`approve racing ${denying ? 'deny' : 'cancel'}: approve ${said(a)}, ${denying ? 'deny' : 'cancel'} ${said(other)}`);
  w.ledger.expected.set(made.id, ['funds_held', 'cancelled']);
  if (won(other)) w.ledger.expected.set(made.id, ['cancelled']);
  else if ((approved || pending) && (await waitFor(w, buyer, made.id, ['funds_held']))) {
    if (must(w.t, await cancel(w, buyer, made.id), `cancel approved ${made.id}`)) w.ledger.expected.set(made.id, ['cancelled']);
  }
}

/**
 * A purchase held and cancelled: what the test sends while a NATS node is down, to time the holds.
 * Without an Idempotency-Key, so what is timed is the purchase's own path: a keyed one first waits
 * for its key's bucket when that bucket is electing a leader (D5.6, docs/deploy.md).
 */
export async function holdProbe(w: Worker): Promise<void> {
  const id = await buy(w, w.consumer, false);
  if (id && must(w.t, await cancel(w, w.consumer, id), `cancel ${id}`)) w.ledger.expected.set(id, ['cancelled']);
}

/** D12: a delivered purchase disputed, and the dispute taken to one of its outcomes. */
export async function dispute(w: Worker): Promise<void> {
  const id = await buy(w, w.consumer);
  if (!id || !must(w.t, await deliver(w, id), `deliver ${id}`)) return;
  w.ledger.expected.set(id, ['delivered']);
  const d = must(w.t, await w.t.keyed('dispute', (via, key) => via(w.consumer).openDispute(id, { reason: 'output_quality', description: 'Not the digest expected.' }, { idempotencyKey: key })), `dispute ${id}`);
  if (!d) return;
  w.ledger.expected.set(id, ['disputed']);
  const way = (['concede', 'withdraw', 'partial', 'contest', 'redo'] as const)[Math.floor(w.random() * 5)]!;
  const step = (what: string, send: Parameters<typeof w.t.keyed>[1]) => w.t.keyed(what, send).then((o) => must(w.t, o, `${what} ${d.id}`));
  let end: TransactionStatus[] = ['settled'];
  if (way === 'concede') {
    end = ['failed'];
    if (!(await step('concede', (via, key) => via(w.provider).respondDispute(d.id, { outcome: 'consumer_wins' }, { idempotencyKey: key })))) return;
  } else if (way === 'withdraw') {
    if (!(await step('withdraw dispute', (via, key) => via(w.consumer).withdrawDispute(d.id, {}, { idempotencyKey: key })))) return;
  } else if (way === 'partial') {
    // Drawn once: a key's retries send the same body (another body under the key is 422, D5.5).
    const refundCents = 1 + Math.floor(w.random() * (PRICE - 1));
    if (!(await step('partial refund', (via, key) => via(OPERATOR).resolveDispute(d.id, { outcome: 'partial_refund', refundCents }, { idempotencyKey: key })))) return;
  } else if (way === 'contest') {
    end = ['failed'];
    if (!(await step('contest', (via, key) => via(w.provider).respondDispute(d.id, { outcome: 'contest' }, { idempotencyKey: key })))) return;
    if (!(await step('operator decides', (via, key) => via(OPERATOR).resolveDispute(d.id, { outcome: 'consumer_wins' }, { idempotencyKey: key })))) return;
  } else {
    if (!(await step('redo', (via, key) => via(OPERATOR).resolveDispute(d.id, { outcome: 'provider_redo' }, { idempotencyKey: key })))) return;
    w.ledger.expected.set(id, ['executing']);
    await deliverAndVerify(w, w.consumer, id);
    return;
  }
  w.ledger.expected.set(id, end);
}

/** D6.8: a child agent spawned with a budget, given a signing key, buying once; its purchase settled. */
export async function spawnChild(w: Worker): Promise<void> {
  const child = must(w.t, await w.t.keyed('spawn', (via, key) => via(w.consumer).spawnAgent(w.consumer.id, { name: 'chaos child', budgetCents: 1500 }, { idempotencyKey: key })), 'spawn');
  if (!child) return;
  const keys = generateSigningKey();
  // Its key works once its budget has moved (the spawn's saga): read until it does.
  // (401 until then: read as "not yet", for as long as a fault may hold the saga up. A 202 whose
  // outcome is unknown is sent again too: setting the same key twice is setting it once.)
  const again = (o: Outcome<unknown>) => o.status === 401 || (!o.ok && o.status === 202);
  const registered = await w.t.read((via) => via({ apiKey: child.apiKey }).updateAgent(child.id, { signingKeyPublic: keys.publicKey }).then((o) => (again(o) ? { ...o, status: 0 } as Outcome<unknown> : o)), 90_000);
  if (!must(w.t, registered, `signing key of child ${child.id}`)) return;
  const kid: Member = { id: child.id, accountId: w.consumer.accountId, apiKey: child.apiKey, secretKey: keys.secretKey, owner: w.consumer.owner };
  const id = await buy(w, kid);
  if (id) await deliverAndVerify(w, kid, id);
}

/** D5.5 / D13.4–5: a funding and a payout, each with its key sent to both gateways at once. */
export async function money(w: Worker): Promise<void> {
  await fundTwice(w, w.consumer, 5_000);
  const key = randomUUID();
  const [a, b] = await Promise.all([0, 1].map((g) => w.t.keyed('withdraw', (via, k) => via(w.consumer).withdraw(w.consumer.id, 2_500, { idempotencyKey: k }), { key, gateway: g })));
  if (must(w.t, a!, 'withdraw')) w.ledger.paidOutCents += 2_500;
  const ids = [a!, b!].map((o) => (o.ok ? o.data.payoutId : `${o.status}`));
  if (ids[0] !== ids[1]) w.t.violation(`withdraw: one key sent to both gateways answered ${ids.join(' and ')}`);
}

/** D6.1: a sign-up, its key sent to both gateways at once: one account. */
export async function signUpTwice(w: Worker): Promise<void> {
  const key = randomUUID();
  const body = { accountType: 'individual' as const, email: `chaos-${key}@example.com`, displayName: 'chaos', agent: { name: 'owner' } };
  const [a, b] = await Promise.all([0, 1].map((g) => w.t.keyed('sign-up', (via, k) => via({}).createAccount(body, { idempotencyKey: k }), { key, gateway: g })));
  must(w.t, a!, 'sign-up');
  const ids = [a!, b!].map((o) => (o.ok ? o.data.id : `${o.status}`));
  if (ids[0] !== ids[1]) w.t.violation(`sign-up: one key sent to both gateways answered ${ids.join(' and ')}`);
}

/** A new member now and then (the load's sign-ups through the whole path). */
export async function newMember(w: Worker): Promise<void> {
  await signUp(w.t, `newcomer-${w.n}`);
}

/** The flows, weighted: purchases most, the rest often enough that a short run has each. */
export const FLOWS: Array<[string, (w: Worker) => Promise<void>]> = [
  ['purchase', purchase], ['purchase', purchase], ['deliver racing cancel', deliverRacingCancel],
  ['negotiation', negotiation], ['approval race', approvalRace], ['approval race', approvalRace],
  ['dispute', dispute], ['dispute', dispute], ['spawn', spawnChild], ['money', money], ['sign-up', signUpTwice], ['new member', newMember],
];

/** Runs flows on the worker while `going()`; the first rounds take each flow in turn, then at random. */
export async function runWorker(w: Worker, going: () => boolean): Promise<void> {
  for (let i = 0; going(); i++) {
    const [name, flow] = i < FLOWS.length ? FLOWS[(i + w.n) % FLOWS.length]! : FLOWS[Math.floor(w.random() * FLOWS.length)]!;
    w.ledger.flows.push(name);
    await flow(w);
  }
}
