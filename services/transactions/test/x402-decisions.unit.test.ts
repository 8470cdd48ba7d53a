import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isAppError, x402SigningString, type X402FacilitatorBody } from '@aex/contracts';
import { decidePurchase, type Purchase, type PurchaseCommand } from '../src/domain/purchase.js';
import { ed25519OfMultibase, requirementsProblem, signatureValid } from '../src/domain/x402-check.js';
import { after, AS_CONSUMER, AS_PROVIDER, changed, effectsOf, FACTS, HELD_AT, NOW, POLICY, stateOf } from './purchase-fixtures.js';

// D19 as decided, no I/O: the payment's checks before anything is held, and the x402 purchase's
// own steps — its expiry after `maxTimeoutSeconds`, the verify answered valid once, the settle.

const decide = (t: Purchase, c: PurchaseCommand) => decidePurchase(t, c, FACTS, POLICY, NOW);
const x402 = (name: string, verified = false): Purchase => ({ ...stateOf(name), x402Nonce: 'nonce-0123456789abcdef', x402TimeoutSeconds: 30, x402Verified: verified });
const claim: PurchaseCommand = { kind: 'x402Claim', caller: AS_PROVIDER };
const settle: PurchaseCommand = { kind: 'x402Settle', caller: AS_PROVIDER };
const refusal = (d: ReturnType<typeof decide>) => (d.kind === 'refused' && isAppError(d.error) ? { code: d.error.entries[0]!.code, details: d.error.entries[0]!.details } : null);

describe('an x402 purchase as decided (D19.2)', () => {
  it('its hold placed at verify: it expires maxTimeoutSeconds after, and that verify answers it valid', () => {
    const d = changed(decide(x402('initiated/requested'), { kind: 'holdPlaced', attempt: 1, at: HELD_AT }));
    expect(d.changes).toMatchObject({ status: 'funds_held', expiresAt: new Date(HELD_AT.getTime() + 30_000), x402Verified: true });
    expect(effectsOf(d, 'schedule')).toEqual([{ kind: 'schedule', timer: 'transactionExpiry', at: new Date(HELD_AT.getTime() + 30_000) }]);
  });

  it('its hold placed after an approval: the payload\'s next verify claims it, once (D10.3)', () => {
    const d = changed(decide(x402('awaiting_approval/requested'), { kind: 'holdPlaced', attempt: 1, at: NOW }));
    expect(d.changes).toMatchObject({ status: 'funds_held', x402Verified: false });
    const held = after(x402('awaiting_approval/requested'), decide(x402('awaiting_approval/requested'), { kind: 'holdPlaced', attempt: 1, at: NOW }));
    const claimed = after(held, decide(held, claim));
    expect(claimed.x402Verified).toBe(true);
    expect(refusal(decide(claimed, claim))).toMatchObject({ code: 'CONFLICT', details: { reason: 'nonce_already_used' } });
  });

  it('a verify again while the approval is awaited, or of an ended payment, is refused with its reason', () => {
    expect(refusal(decide(x402('awaiting_approval/none'), claim))).toMatchObject({ code: 'INVALID_STATE', details: { reason: 'approval_required' } });
    expect(refusal(decide(x402('expired/returned'), claim))).toMatchObject({ details: { reason: 'nonce_already_used' } });
  });

  it('settle captures the hold: delivered with no output, the price paid less the D9.11 fee', () => {
    const d = changed(decide(x402('funds_held/held', true), settle));
    expect(d.changes).toMatchObject({ status: 'delivered', deliveredAt: NOW, hold: 'settling' });
    expect(effectsOf(d, 'settle')).toEqual([{ kind: 'settle', amountCents: 1000, feeCents: 50, refundCents: 0 }]);
  });

  it('settle repeated while or after it settles changes nothing; an unverified or expired payment is refused', () => {
    expect(decide(x402('delivered/settling', true), settle)).toEqual({ kind: 'unchanged' });
    expect(decide(x402('settled/settled', true), settle)).toEqual({ kind: 'unchanged' });
    expect(refusal(decide(x402('funds_held/held', false), settle))).toMatchObject({ details: { reason: 'payment_not_verified' } });
    expect(refusal(decide(x402('expired/returned', true), settle))).toMatchObject({ details: { reason: 'payment_expired' } });
  });

  it('only the provider settles; a purchase that is not an x402 payment is not one to settle', () => {
    expect(refusal(decide(x402('funds_held/held', true), { kind: 'x402Settle', caller: AS_CONSUMER }))).toMatchObject({ code: 'FORBIDDEN' });
    expect(refusal(decide(stateOf('funds_held/held'), settle))).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('the payment checked before anything is held (D19.1, D19.2)', () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  const requirements = { scheme: 'aex-escrow', network: 'aex:exchange.test%3A8080', amount: '500', asset: 'USD', payTo: '00000000-0000-4000-8000-000000000002', maxTimeoutSeconds: 30, extra: { serviceId: '00000000-0000-4000-8000-000000000003' } };
  const payer = '00000000-0000-4000-8000-000000000004';
  const validBefore = Math.floor(NOW.getTime() / 1000) + 60;
  const signed = (r = requirements): X402FacilitatorBody => {
    const signature = sign(null, Buffer.from(x402SigningString({ requirements: r, payer, nonce: 'nonce-0123456789abcdef', validBefore })), privateKey).toString('base64');
    return { x402Version: 2, paymentRequirements: requirements, paymentPayload: { x402Version: 2, accepted: r, payload: { payer, nonce: 'nonce-0123456789abcdef', validBefore, signature } } };
  };

  it('passes a payload that accepted these requirements, before its validBefore, signed by the payer\'s key', () => {
    expect(requirementsProblem(signed(), requirements.network, NOW)).toBeNull();
    expect(signatureValid(signed(), raw)).toBe(true);
  });

  it('names what is wrong: another scheme, network or asset, other requirements accepted, validBefore passed', () => {
    const body = signed();
    expect(requirementsProblem({ ...body, paymentRequirements: { ...requirements, scheme: 'exact' } }, requirements.network, NOW)?.reason).toBe('unsupported_scheme');
    expect(requirementsProblem(body, 'aex:other.example', NOW)?.reason).toBe('invalid_network');
    expect(requirementsProblem({ ...body, paymentRequirements: { ...requirements, asset: 'USDC' } }, requirements.network, NOW)?.reason).toBe('invalid_asset');
    expect(requirementsProblem({ ...body, paymentRequirements: { ...requirements, amount: '1' } }, requirements.network, NOW)?.reason).toBe('requirements_mismatch');
    expect(requirementsProblem(body, requirements.network, new Date((validBefore + 1) * 1000))?.reason).toBe('payment_expired');
  });

  it('a signature of other requirements, or by another key, does not verify', () => {
    const other = signed({ ...requirements, amount: '1' });
    expect(signatureValid({ ...other, paymentPayload: { ...other.paymentPayload, accepted: requirements } }, raw)).toBe(false);
    const stranger = Buffer.from(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!, 'base64url');
    expect(signatureValid(signed(), stranger)).toBe(false);
  });

  it('reads the raw key of a DID document\'s Ed25519 Multikey (D6.7), and nothing else', () => {
    // base58btc written here (Bitcoin alphabet), so the decoding is not checked by the code that made it.
    const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
    let n = BigInt(`0x${Buffer.concat([Buffer.from([0xed, 0x01]), raw]).toString('hex')}`);
    let text = '';
    for (; n > 0n; n /= 58n) text = ALPHABET[Number(n % 58n)] + text;
    expect(Buffer.from(ed25519OfMultibase(`z${text}`)!)).toEqual(raw);
    expect(ed25519OfMultibase(`f${text}`)).toBeNull();
    expect(ed25519OfMultibase('z111')).toBeNull();
  });
});
