import pg from 'pg';
import { unwrap } from '@agent-exchange/client';
import type { DiscoverView } from '@aex/contracts';
import type { Member, TestExchange } from './harness.js';
import { funded, INPUT, OUTPUT, party, serviceBody, waitForStatus, type Party } from './transaction-kit.js';

// What the tests of discovery that learns from purchases (D22.2) share: services with words of
// their own, a buyer's discover and purchase to each ending, the catalog's judgement of a purchase
// awaited, and a service's score for a need with learning on and off.

/** A provider of its own selling the digest contract under the given name and description. */
export async function offer(ex: TestExchange, name: string, description: string, category = 'audio'): Promise<{ provider: Party; serviceId: string }> {
  const provider = await party(ex);
  const serviceId = unwrap(await provider.client.createService(serviceBody({ name, description, category, tags: [] }))).id;
  return { provider, serviceId };
}

/** A buyer of an account of its own, with money for several purchases. */
export const buyer = (ex: TestExchange): Promise<Party> => funded(ex, 20_000);

/** The answer to a need, with the given service's score and place in it (0 and 0 when it is not there). */
export async function ask(m: Member, need: string, serviceId: string): Promise<{ answer: DiscoverView; queryId: string; score: number; rank: number }> {
  const answer = unwrap(await m.client.discover({ need, limit: 50 }));
  const at = answer.matches.findIndex((x) => x.serviceId === serviceId);
  return { answer, queryId: answer.queryId, score: at < 0 ? 0 : answer.matches[at]!.compatibilityScore, rank: at + 1 };
}

export type Ending = 'settled' | 'failed' | 'expired' | 'dispute_lost';

/**
 * A purchase of `serviceId` with `queryId`, taken to `ending`: settled with a quality score, failed
 * (every delivery attempt invalid), expired (its timeout passed on the exchange's clock) or a
 * dispute the provider lost. Returns the transaction's id.
 */
export async function buyTo(ex: TestExchange, m: Member, seller: Party, serviceId: string, queryId: string | undefined, ending: Ending, qualityScore = 90): Promise<string> {
  const created = unwrap(await m.client.createTransaction({ serviceId, input: INPUT, ...(queryId ? { queryId } : {}) }));
  const held = created.status === 'funds_held' ? created : await waitForStatus(m, created.id, 'funds_held');
  if (ending === 'expired') {
    ex.clock.advance(serviceBody().sla.timeoutMs + 1000);
    await ex.transactions!.fireDueTimers();
    await waitForStatus(m, held.id, 'expired');
    return held.id;
  }
  if (ending === 'failed') {
    // The digest contract allows 1 + maxRetries = 2 attempts; both invalid end it failed.
    for (let i = 0; i < 2; i++) await seller.client.deliver(held.id, { output: { digest: 'not a digest' } });
    await waitForStatus(m, held.id, 'failed');
    return held.id;
  }
  unwrap(await seller.client.deliver(held.id, { output: OUTPUT }));
  if (ending === 'dispute_lost') {
    const dispute = unwrap(await m.client.openDispute(held.id, { reason: 'output_quality', description: 'Not what was asked.' }));
    unwrap(await seller.client.respondDispute(dispute.id, { outcome: 'consumer_wins', message: 'Sorry.' }));
    await waitForStatus(m, held.id, 'failed');
    return held.id;
  }
  unwrap(await m.client.verify(held.id, { qualityScore }));
  await waitForStatus(m, held.id, 'settled');
  return held.id;
}

/** Discovers `need` as `m` and buys `serviceId` from the answer's query, to `ending`. */
export async function findAndBuy(ex: TestExchange, m: Member, seller: Party, serviceId: string, need: string, ending: Ending = 'settled'): Promise<string> {
  const { queryId } = await ask(m, need, serviceId);
  return buyTo(ex, m, seller, serviceId, queryId, ending);
}

/**
 * Waits until the catalog has judged the purchase (its row in `learning_evidence`), then until this
 * catalog replica holds what it judged; returns why it was ignored, or null when it counts.
 */
export async function judged(ex: TestExchange, transactionId: string): Promise<string | null> {
  const sql = new pg.Client({ connectionString: ex.databaseUrl });
  await sql.connect();
  try {
    for (const deadline = Date.now() + 20_000; ;) {
      const { rows } = await sql.query<{ ignored_reason: string | null }>('select ignored_reason from catalog.learning_evidence where transaction_id = $1', [transactionId]);
      if (rows[0]) {
        await ex.catalog.discovery.learning.catchUp();
        return rows[0].ignored_reason;
      }
      if (Date.now() > deadline) throw new Error(`the catalog did not judge transaction ${transactionId}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await sql.end();
  }
}

/** The service's score for the need with learning on and with it off (`DISCOVERY_LEARNING`), on the same catalog. */
export async function onAndOff(ex: TestExchange, m: Member, need: string, serviceId: string): Promise<{ on: number; off: number }> {
  const learning = ex.catalog.discovery.learning;
  learning.enabled = false;
  try {
    const off = (await ask(m, need, serviceId)).score;
    learning.enabled = true;
    return { on: (await ask(m, need, serviceId)).score, off };
  } finally {
    learning.enabled = true;
  }
}
