import pg from 'pg';
import { describe, expect } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { DiscoveryMatch, type SessionView } from '@aex/contracts';
import { exchangeTest } from './fixtures.js';
import { expectError, type Member } from './harness.js';
import { ask, buyer, buyTo, findAndBuy, judged, offer, onAndOff } from './learning-kit.js';
import { INPUT, OUTPUT, waitForStatus } from './transaction-kit.js';

// D22.2: discovery learns from purchases that carried the discover's queryId — through the gateway,
// on real Postgres and NATS JetStream, with the catalog's sentence encoder. A purchase's outcome
// reaches the catalog as an event; each test waits until the catalog has judged it (its row), then
// compares a service's score for a later need with learning on and off on the same catalog (the
// only difference between the two is what was learned: trust moves with every purchase too).

const it = exchangeTest({ RATE_LIMIT_DISCOVERY_PER_MIN: '100000', RATE_LIMIT_WRITE_PER_MIN: '100000' }, { timerPollMs: 100 });
/** An exchange whose catalog has no sentence encoder: learning compares needs by their words. */
const plain = exchangeTest({ RATE_LIMIT_DISCOVERY_PER_MIN: '100000', RATE_LIMIT_WRITE_PER_MIN: '100000', DISCOVERY_MEANING: 'false' });

const SPEECH = 'Converts recorded speech in 40 languages into text, with punctuation, speaker turns and word timings.';
const LOUDNESS = 'Adjusts audio to a target integrated loudness (LUFS) for streaming platforms without clipping.';
const TIDES = 'Gives high and low tide times and heights for a coastal station on a date.';

describe('a purchase that carried a queryId (D22.2)', () => {
  it('settled: a later need close in meaning ranks the bought service higher than before', async ({ exchange: ex }) => {
    const { provider, serviceId } = await offer(ex, 'Speech Recognition API', SPEECH);
    await offer(ex, 'Podcast Chapter Maker', 'Splits a long episode into titled chapters with start times, based on where the topic changes.');
    const observer = await buyer(ex);
    const paraphrase = 'turn the speech in my podcast interview into written text';
    const before = await ask(observer, paraphrase, serviceId);

    const b = await buyer(ex);
    const { queryId } = await ask(b, 'transcribe this podcast interview to text', serviceId);
    const txId = await buyTo(ex, b, provider, serviceId, queryId, 'settled');
    expect(await judged(ex, txId)).toBeNull();

    const after = await onAndOff(ex, observer, paraphrase, serviceId);
    expect(after.on).toBeGreaterThan(after.off);
    expect(after.on).toBeGreaterThan(before.score);
    const rank = (await ask(observer, paraphrase, serviceId)).rank;
    expect(rank).toBeGreaterThan(0);
    if (before.rank > 0) expect(rank).toBeLessThanOrEqual(before.rank);
    // The purchase kept the discover it came from.
    const sql = new pg.Client({ connectionString: ex.databaseUrl });
    await sql.connect();
    try {
      expect((await sql.query('select query_id from transactions.transactions where id = $1', [txId])).rows[0]).toEqual({ query_id: queryId });
    } finally {
      await sql.end();
    }
  });

  it('within a session: the session\'s queryId is carried by its calls', async ({ exchange: ex }) => {
    const { provider, serviceId } = await offer(ex, 'Voice Activity Detector', 'Marks the stretches of a recording where someone is talking and where there is only silence or noise.');
    const b = await buyer(ex);
    const { queryId } = await ask(b, 'find where people are speaking in this long recording', serviceId);
    const opened = unwrap(await b.client.openSession({ serviceId, budgetCents: 3000, queryId }));
    const session = opened.status === 'open' ? opened : await waitForOpen(b, opened.id);
    const call = unwrap(await b.client.callInSession(session.id, INPUT));
    unwrap(await provider.client.deliver(call.id, { output: OUTPUT }));
    await waitForStatus(b, call.id, 'settled');
    expect(await judged(ex, call.id)).toBeNull();
    const after = await onAndOff(ex, b, 'mark the moments someone talks in an audio clip', serviceId);
    expect(after.on).toBeGreaterThan(after.off);
  });

  it.for(['failed', 'expired', 'dispute_lost'] as const)('%s: the service ranks lower for a need close to the bought one', async (ending, { exchange: ex }) => {
    const { provider, serviceId } = await offer(ex, `Loudness Normalizer ${ending}`, LOUDNESS);
    const b = await buyer(ex);
    const txId = await findAndBuy(ex, b, provider, serviceId, 'normalize the loudness of my podcast episode for streaming', ending);
    expect(await judged(ex, txId)).toBeNull();
    const after = await onAndOff(ex, b, 'make my podcast episode loud enough for streaming platforms', serviceId);
    expect(after.off).toBeGreaterThan(0);
    expect(after.on).toBeLessThan(after.off);
  });

  it('counts distinct buyers: three buyers lift a service more than one buyer buying three times', async ({ exchange: ex }) => {
    const one = await offer(ex, 'Harbour Tide Predictor North', TIDES, 'environment');
    const three = await offer(ex, 'Harbour Tide Predictor South', TIDES, 'environment');
    const need = 'when is high tide at Brest tomorrow';
    const loyal = await buyer(ex);
    for (let i = 0; i < 3; i++) expect(await judged(ex, await findAndBuy(ex, loyal, one.provider, one.serviceId, need))).toBeNull();
    for (let i = 0; i < 3; i++) expect(await judged(ex, await findAndBuy(ex, await buyer(ex), three.provider, three.serviceId, need))).toBeNull();

    const observer = await buyer(ex);
    const later = 'what time is high water in the harbour tomorrow';
    const byOne = await onAndOff(ex, observer, later, one.serviceId);
    const byThree = await onAndOff(ex, observer, later, three.serviceId);
    expect(byOne.on).toBeGreaterThan(byOne.off);
    expect(byThree.on - byThree.off).toBeGreaterThan(byOne.on - byOne.off);
  });
});

describe('purchases that teach nothing (D22.2)', () => {
  it('a purchase by an agent of the provider\'s own account changes nothing', async ({ exchange: ex }) => {
    const { provider, serviceId } = await offer(ex, 'Sound Level Matcher', LOUDNESS);
    const sibling = await ex.addAgent(provider.owner);
    unwrap(await sibling.client.fund(sibling.agentId, 5000));
    const txId = await findAndBuy(ex, sibling, provider, serviceId, 'normalize the loudness of my podcast episode for streaming');
    expect(await judged(ex, txId)).toBe('own_account');
    const after = await onAndOff(ex, sibling, 'make my podcast episode loud enough for streaming platforms', serviceId);
    expect(after.on).toBe(after.off);
  });

  it('a purchase naming another agent\'s queryId changes nothing', async ({ exchange: ex }) => {
    const { provider, serviceId } = await offer(ex, 'Audio Loudness Fixer', LOUDNESS);
    const asker = await buyer(ex);
    const { queryId } = await ask(asker, 'normalize the loudness of my podcast episode for streaming', serviceId);
    const b = await buyer(ex);
    const txId = await buyTo(ex, b, provider, serviceId, queryId, 'settled');
    expect(await judged(ex, txId)).toBe('another_agents_query');
    const after = await onAndOff(ex, b, 'make my podcast episode loud enough for streaming platforms', serviceId);
    expect(after.on).toBe(after.off);
  });

  it('a queryId that is not a UUID is refused with 400 naming the field, on purchases and sessions', async ({ exchange: ex }) => {
    const { serviceId } = await offer(ex, 'Speech To Text Service', SPEECH);
    const b = await buyer(ex);
    for (const r of [
      await b.client.createTransaction({ serviceId, input: INPUT, queryId: 'not-a-uuid' }),
      await b.client.openSession({ serviceId, budgetCents: 2000, queryId: '1234' }),
    ]) {
      expectError(r, 400, 'VALIDATION_ERROR');
      if (!r.ok) expect(r.error.errors[0]).toMatchObject({ field: '/body/queryId' });
    }
  });
});

describe('evidence is never shown (D22.2)', () => {
  it('answers carry no trace of what was bought, by whom or for which need', async ({ exchange: ex }) => {
    const { provider, serviceId } = await offer(ex, 'Voice Transcriber', SPEECH);
    const b = await buyer(ex);
    const bought = 'convert a voicemail recording from my dentist into written words';
    const { queryId } = await ask(b, bought, serviceId);
    const txId = await buyTo(ex, b, provider, serviceId, queryId, 'settled');
    expect(await judged(ex, txId)).toBeNull();

    const stranger = await buyer(ex);
    const { answer } = await ask(stranger, 'write out the spoken words of a voicemail', serviceId);
    expect(Object.keys(answer).sort()).toEqual(['matches', 'queryId', 'totalMatches', 'truncated', 'warnings']);
    // Every key of a match is one the contract describes (optional ones such as lowConfidence may be absent): nothing else rides along.
    for (const m of answer.matches) {
      expect(Object.keys(DiscoveryMatch.properties)).toEqual(expect.arrayContaining(Object.keys(m)));
      expect(Object.keys(m)).toEqual(expect.arrayContaining(DiscoveryMatch.required ?? []));
    }
    const strangerSees = JSON.stringify([answer, unwrap(await stranger.client.getService(serviceId)), unwrap(await stranger.client.listServices({ limit: 100 }))]);
    for (const secret of [bought, 'dentist', queryId, b.agentId, b.accountId]) expect(strangerSees).not.toContain(secret);
    // The provider, a party to the purchase, sees the purchase — not the discover it came from.
    const providerSees = JSON.stringify([unwrap(await provider.client.getTransaction(txId)), unwrap(await provider.client.listTransactions({ role: 'provider' }))]);
    for (const secret of [bought, 'dentist', queryId]) expect(providerSees).not.toContain(secret);
  });
});

describe('meaning turned off (DISCOVERY_MEANING=false)', () => {
  plain('learns by the words the needs share: a later need in most of the bought need\'s words ranks the service higher', async ({ exchange: ex }) => {
    const { provider, serviceId } = await offer(ex, 'Harbour Tide Predictor', TIDES, 'environment');
    const b = await buyer(ex);
    expect(await judged(ex, await findAndBuy(ex, b, provider, serviceId, 'high tide times at Brest harbour tomorrow'))).toBeNull();
    const after = await onAndOff(ex, b, 'tide times for Brest harbour', serviceId);
    expect(after.on).toBeGreaterThan(after.off);
  });
});

async function waitForOpen(m: Member, id: string): Promise<SessionView> {
  for (const deadline = Date.now() + 10_000; ;) {
    const s = unwrap(await m.client.getSession(id));
    if (s.status === 'open') return s;
    if (Date.now() > deadline) throw new Error(`session ${id} is ${s.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
