import http from 'node:http';
import { createPrivateKey, randomBytes, sign } from 'node:crypto';
import express from 'express';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { AexEscrowClient, AexEscrowServer, aexEscrowOption, aexNetwork, exchangeFacilitator, x402SigningString } from '@agent-exchange/x402';
import type { Member, TestExchange } from './harness.js';

// What the x402 tests share (D19): a provider's own HTTP server protected by stock @x402/express
// with the exchange as its facilitator, a buyer paying with stock @x402/fetch and the aex-escrow
// client scheme, and payloads signed by hand for the cases a stock client never sends.

/** A running provider server: `/report` answers, `/broken` fails (so it is never settled), `/slow` settles after `maxTimeoutSeconds` 1. */
export interface ProviderServer {
  url: string;
  close(): Promise<void>;
}

export const PRICE_CENTS = 500;
export const TIMEOUT_SECONDS = 30;
export const REPORT = { report: 'quarterly numbers', rows: 3 };

/** The provider's express app: x402's middleware in front of its routes, one `aex-escrow` option each. */
export async function providerServer(ex: TestExchange, provider: Member, serviceId: string): Promise<ProviderServer> {
  const option = aexEscrowOption({ baseUrl: ex.config.PUBLIC_BASE_URL, payTo: provider.agentId, serviceId, priceCents: PRICE_CENTS, maxTimeoutSeconds: TIMEOUT_SECONDS });
  const resourceServer = new x402ResourceServer(exchangeFacilitator({ baseUrl: ex.url, apiKey: provider.apiKey }))
    .register(aexNetwork(ex.config.PUBLIC_BASE_URL), new AexEscrowServer());
  const app = express();
  app.use(paymentMiddleware({
    'GET /report': { accepts: option, description: 'A report, paid from an exchange wallet', mimeType: 'application/json' },
    'GET /broken': { accepts: option, description: 'A resource whose handler fails', mimeType: 'application/json' },
  }, resourceServer));
  app.get('/report', (_req, res) => {
    res.json(REPORT);
  });
  app.get('/broken', (_req, res) => {
    res.status(500).json({ error: 'the report generator is down' });
  });
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** A buyer's fetch that pays with `aex-escrow` (stock x402Client + wrapFetchWithPayment); `sent` keeps each PAYMENT-SIGNATURE it sent. */
export function payingFetch(ex: TestExchange, buyer: Member): { fetch: typeof fetch; sent: string[] } {
  const sent: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const req = new Request(input, init);
    const header = req.headers.get('payment-signature');
    if (header) sent.push(header);
    return fetch(req);
  };
  // The exchange's clock is the test's (it may be moved): the payment's validBefore follows it.
  const scheme = new AexEscrowClient({ agentId: buyer.agentId, signingKey: buyer.keys!.secretKey, now: ex.clock.now });
  // x402's default spend cap is $1 a payment; the scheme tells it USD has 2 decimals, so a cap in dollars reads cents right.
  const client = new x402Client().register('aex:*', scheme).setSpendControls({ maxAmountPerPayment: '$10' });
  return { fetch: wrapFetchWithPayment(recording, client), sent };
}

/** x402's base64 JSON header. */
export const decodeHeader = <T>(value: string | null): T => JSON.parse(Buffer.from(value ?? '', 'base64').toString('utf8')) as T;

/** The requirements the provider's server asks for (its 402), as a buyer reads them. */
export async function requirementsOf(url: string): Promise<PaymentRequirements> {
  const res = await fetch(url);
  const required = decodeHeader<{ accepts: PaymentRequirements[] }>(res.headers.get('payment-required'));
  return required.accepts[0]!;
}

/** A payload signed by hand with the buyer's key (a chosen nonce, requirements or validity). */
export function signedPayload(buyer: Member, requirements: PaymentRequirements, opts: { nonce?: string; validBefore?: number; key?: string } = {}): PaymentPayload {
  const nonce = opts.nonce ?? randomBytes(18).toString('base64url');
  const validBefore = opts.validBefore ?? Math.floor(Date.now() / 1000) + 300;
  const seed = Buffer.from(opts.key ?? buyer.keys!.secretKey, 'base64');
  const key = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
  const signature = sign(null, Buffer.from(x402SigningString({ requirements, payer: buyer.agentId, nonce, validBefore })), key).toString('base64');
  return { x402Version: 2, accepted: requirements, payload: { payer: buyer.agentId, nonce, validBefore, signature } };
}

/** POST /x402/{verify|settle} as x402's HTTPFacilitatorClient sends it, with `apiKey` (none: no Authorization). */
export async function facilitator(ex: TestExchange, path: 'verify' | 'settle', payload: unknown, requirements: unknown, apiKey?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${ex.url}/x402/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
    body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
