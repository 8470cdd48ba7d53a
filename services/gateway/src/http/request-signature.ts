import type { FastifyRequest } from 'fastify';
import { AppError, type Principal, type RequestSignature } from '@aex/contracts';
import type { ExchangeConfig } from '@aex/platform';
import { checkSignature } from '../domain/signature.js';

/**
 * The request's signature by the principal's registered key, verified: D3's `X-AE-Signature`
 * headers, or an RFC 9421 `Signature-Input`/`Signature` pair (D20). Returns what was verified, or
 * undefined when the request carries no signature and `required` is false; throws the D3 error
 * (401 SIGNATURE_REQUIRED / SIGNATURE_INVALID / SIGNATURE_EXPIRED, with `details` that help) otherwise.
 */
export function verifiedSignature(req: FastifyRequest, principal: Principal, required: boolean, config: ExchangeConfig): RequestSignature | undefined {
  const signature = header(req, 'x-ae-signature');
  const timestamp = header(req, 'x-ae-signature-timestamp');
  if (!required && signature === undefined && timestamp === undefined) return undefined;
  const result = checkSignature({ signature, timestamp, method: req.method, target: req.url, rawBody: req.rawBody, publicKey: principal.signingKeyPublic, nowMs: Date.now() });
  if (!result.ok) throw new AppError(result.code, result.message, { details: { ...result.help, docs: `${config.PUBLIC_BASE_URL}/docs/signing.md` } });
  return { scheme: 'x-ae', signature: signature!, timestamp: timestamp! };
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
