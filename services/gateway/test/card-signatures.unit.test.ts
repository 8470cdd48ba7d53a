import { afterEach, describe, expect, it } from 'vitest';
import { subjects, transactionOps } from '@aex/contracts';
import type { Bus, ExchangeConfig } from '@aex/platform';
import { createTestBus, testLogger } from '@aex/platform/testing';
import { CARD_SIGNATURE_FRESH_MS, SignedCards } from '../src/http/card-signatures.js';

// D21.1: the gateway's memory of cards' signatures (card-signatures.ts) in front of the transactions
// service that signs. Real: the signed-card cache and the RPC call. Stubbed: the transactions service
// (a handler on an in-memory bus that answers a signature naming the key it was told to use) and the clock.

interface Signer {
  kid: string;
  answering: boolean;
  asked: number;
}

const buses: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const dispose of buses.splice(0)) await dispose();
});

async function start(): Promise<{ cards: SignedCards; signer: Signer; clock: { ms: number }; bus: Bus }> {
  const { bus, dispose } = await createTestBus('memory');
  buses.push(() => dispose());
  const signer: Signer = { kid: 'key-1', answering: true, asked: 0 };
  await bus.serve(subjects.rpc(bus.namespace, 'transactions', transactionOps.signAgentCard.name), 'transactions', async (raw) => {
    signer.asked++;
    if (!signer.answering) return { ok: false, status: 503, errors: [{ code: 'SERVICE_UNAVAILABLE', message: 'down' }] };
    const card = (raw as { input: { body: { card: { name: string } } } }).input.body.card;
    return { ok: true, status: 200, data: { signatures: [{ protected: `${signer.kid}/${card.name}`, signature: 'sig' }], kid: signer.kid } };
  });
  const clock = { ms: 1_000_000 };
  const cards = new SignedCards(bus, { RPC_TIMEOUT_MS: 500 } as ExchangeConfig, () => clock.ms);
  return { cards, signer, clock, bus };
}

const card = (name: string) => ({ name, supportedInterfaces: [] });
const signaturesOf = async (cards: SignedCards, c: Record<string, unknown>) => (JSON.parse(await cards.signed(c, 'req', testLogger())) as { signatures: Array<{ protected: string }> }).signatures;

describe('signed agent cards in the gateway\'s memory (D21.1)', () => {
  it('serves the card as built with its signatures appended', async () => {
    const { cards } = await start();
    expect(JSON.parse(await cards.signed(card('a'), 'req', testLogger()))).toEqual({ name: 'a', supportedInterfaces: [], signatures: [{ protected: 'key-1/a', signature: 'sig' }] });
  });

  it('reuses a card\'s signatures while fresh, and asks again once they are not: a rotated key then signs', async () => {
    const { cards, signer, clock } = await start();
    await signaturesOf(cards, card('a'));
    signer.kid = 'key-2';
    clock.ms += CARD_SIGNATURE_FRESH_MS - 1;
    expect(await signaturesOf(cards, card('a'))).toEqual([expect.objectContaining({ protected: 'key-1/a' })]);
    expect(signer.asked).toBe(1);
    clock.ms += 1;
    expect(await signaturesOf(cards, card('a'))).toEqual([expect.objectContaining({ protected: 'key-2/a' })]);
    expect(signer.asked).toBe(2);
  });

  it('signs a card whose content changed at once', async () => {
    const { cards, signer } = await start();
    await signaturesOf(cards, card('a'));
    expect(await signaturesOf(cards, card('b'))).toEqual([expect.objectContaining({ protected: 'key-1/b' })]);
    expect(signer.asked).toBe(2);
  });

  it('asks once for a card requested many times at once', async () => {
    const { cards, signer } = await start();
    await Promise.all(Array.from({ length: 5 }, () => signaturesOf(cards, card('a'))));
    expect(signer.asked).toBe(1);
  });

  it('serves the last signatures of a card when transactions does not sign, and refuses a card never signed', async () => {
    const { cards, signer, clock } = await start();
    await signaturesOf(cards, card('a'));
    signer.answering = false;
    clock.ms += CARD_SIGNATURE_FRESH_MS * 10;
    expect(await signaturesOf(cards, card('a'))).toEqual([expect.objectContaining({ protected: 'key-1/a' })]);
    await expect(signaturesOf(cards, card('b'))).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
  });
});
