import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from 'jose';
import type { ReceiptPayload } from '@aex/contracts';

/** A receipt that is not the exchange's, was altered, or is not a receipt. */
export class ReceiptVerificationError extends Error {}

/**
 * D18.4: checks a receipt offline, with the exchange's JWK set alone (`client.receiptKeys()`, or
 * `/.well-known/jwks.json` fetched once and kept): an EdDSA compact JWS of type `aex-receipt+jwt`
 * signed by one of its keys, current or retired. Answers what it states; throws
 * `ReceiptVerificationError` otherwise. `issuer`: the exchange's DID, when it must be that one.
 */
export async function verifyReceipt(jws: string, jwks: JSONWebKeySet, opts: { issuer?: string } = {}): Promise<ReceiptPayload & { kid: string }> {
  let verified: Awaited<ReturnType<typeof compactVerify>>;
  try {
    verified = await compactVerify(jws, createLocalJWKSet(jwks), { algorithms: ['EdDSA'] });
  } catch (err) {
    throw new ReceiptVerificationError(`The receipt does not verify with these keys: ${(err as Error).message}`);
  }
  if (verified.protectedHeader.typ !== 'aex-receipt+jwt') throw new ReceiptVerificationError(`Not a receipt: typ ${String(verified.protectedHeader.typ)}`);
  const payload = JSON.parse(new TextDecoder().decode(verified.payload)) as ReceiptPayload;
  if (typeof payload.receipt !== 'object' || payload.receipt === null || payload.sub !== payload.receipt.transactionId) throw new ReceiptVerificationError('Not a receipt: its claims are missing');
  if (opts.issuer !== undefined && payload.iss !== opts.issuer) throw new ReceiptVerificationError(`The receipt was issued by ${payload.iss}, not ${opts.issuer}`);
  return { ...payload, kid: verified.protectedHeader.kid! };
}
