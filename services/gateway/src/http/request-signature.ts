import type { FastifyRequest } from 'fastify';
import { AppError, didWebFor, type Principal, type RequestSignature } from '@aex/contracts';
import type { ExchangeConfig } from '@aex/platform';
import { checkHttpMessageSignature } from '../domain/http-message-signature.js';
import { checkSignature } from '../domain/signature.js';
import { signatureUse, type SignatureUse } from '../guards/used-signatures.js';

/** A verified signature: what the service is told of it, and what names its one use (D24.2). */
export interface VerifiedSignature {
  view: RequestSignature;
  use: SignatureUse;
}

/**
 * The request's signature by the principal's registered key, verified: D3's `X-AE-Signature`
 * headers, or an RFC 9421 `Signature-Input`/`Signature` pair (D20). Returns what was verified, or
 * undefined when the request carries no signature and `required` is false; throws the D3 error
 * (401 SIGNATURE_REQUIRED / SIGNATURE_INVALID / SIGNATURE_EXPIRED, with `details` that help) otherwise.
 * Whether the signature was used before is the caller's to ask (`UsedSignatures`, D24.2).
 */
export function verifiedSignature(req: FastifyRequest, principal: Principal, required: boolean, config: ExchangeConfig): VerifiedSignature | undefined {
  const signatureInput = header(req, 'signature-input');
  // D20.1: a request that carries Signature-Input is verified as RFC 9421, whatever else it carries.
  if (signatureInput !== undefined) return rfc9421(req, principal, signatureInput, config);
  const signature = header(req, 'x-ae-signature');
  const timestamp = header(req, 'x-ae-signature-timestamp');
  if (!required && signature === undefined && timestamp === undefined) return undefined;
  const result = checkSignature({ signature, timestamp, method: req.method, target: req.url, rawBody: req.rawBody, publicKey: principal.signingKeyPublic, nowMs: Date.now() });
  if (!result.ok) throw new AppError(result.code, result.message, { details: { ...result.help, docs: `${config.PUBLIC_BASE_URL}/docs/signing.md` } });
  return { view: { scheme: 'x-ae', signature: signature!, timestamp: timestamp! }, use: signatureUse(result.signatureBytes) };
}

function rfc9421(req: FastifyRequest, principal: Principal, signatureInput: string, config: ExchangeConfig): VerifiedSignature {
  const did = didWebFor(config.PUBLIC_BASE_URL, principal.agentId);
  const result = checkHttpMessageSignature({
    signatureInput,
    signature: header(req, 'signature'),
    contentDigest: header(req, 'content-digest'),
    method: req.method,
    target: req.url,
    origins: originsOf(req, config),
    headers: req.headers,
    rawBody: req.rawBody,
    publicKey: principal.signingKeyPublic,
    did,
    currentKeyId: principal.signingKeyNumber ? `${did}#key-${principal.signingKeyNumber}` : null,
    nowMs: Date.now(),
  });
  if (!result.ok) throw new AppError(result.code, result.message, { details: { ...result.help, docs: `${config.PUBLIC_BASE_URL}/docs/signing.md#rfc-9421-http-message-signatures` } });
  return {
    view: { scheme: 'rfc9421', signature: result.signature, timestamp: new Date(result.created * 1000).toISOString(), input: result.signatureInput },
    use: signatureUse(result.signatureBytes, result.nonce !== undefined ? { keyid: result.keyid, nonce: result.nonce } : undefined),
  };
}

/**
 * The origins a client may have signed `@target-uri` and `@authority` against: the deployment's
 * public address, and the one this request names (its Host, as a client inside the cluster sees it).
 */
function originsOf(req: FastifyRequest, config: ExchangeConfig): string[] {
  const origins = [new URL(config.PUBLIC_BASE_URL).origin];
  const host = header(req, 'host');
  if (host !== undefined) {
    try {
      const own = new URL(`${req.protocol}://${host}`).origin;
      if (own !== origins[0]) origins.push(own);
    } catch {
      // A Host that is no authority names no origin: only the public one is tried.
    }
  }
  return origins;
}

/** Whether the request carries a signature of either scheme (such a request is never answered from a cache). */
export function carriesSignature(req: FastifyRequest): boolean {
  const h = req.headers;
  return h['x-ae-signature'] !== undefined || h['x-ae-signature-timestamp'] !== undefined || h['signature-input'] !== undefined || h['signature'] !== undefined;
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
