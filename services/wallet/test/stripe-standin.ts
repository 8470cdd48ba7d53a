import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import Stripe from 'stripe';

/**
 * A local stand-in for the few Stripe endpoints the wallet uses (no network here): Checkout
 * Sessions created and retrieved, Express accounts and their Account Links, Transfers, in the shapes the SDK's types declare, with Stripe's idempotency
 * (the same key and body answer the same session; the same key with another body is refused). The
 * test plays the payer (`pay`, `expire`) and Stripe's webhook sender (`event`, `sign`).
 */
export class StripeStandIn {
  readonly sessions = new Map<string, Stripe.Checkout.Session>();
  /** Every request, as the SDK sent it: method, path, idempotency key, form fields. */
  readonly requests: Array<{ method: string; path: string; idempotencyKey: string | undefined; form: Record<string, string> }> = [];
  private readonly byKey = new Map<string, { body: string; answer: unknown }>();
  private server!: Server;
  port = 0;
  /** Called once an answer is sent (a test kills the exchange right after Stripe answered it). */
  answered: ((method: string, path: string) => void) | undefined;
  /** The SDK, for its webhook helpers (signing test headers). */
  readonly sdk = new Stripe('sk_test_standin');

  constructor(readonly webhookSecret = `whsec_${randomBytes(16).toString('hex')}`) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const path = req.url ?? '';
      void this.answer(req).then(({ status, body }) => {
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(6).toString('hex')}` }).end(JSON.stringify(body), () => this.answered?.(req.method!, path));
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Its address, for `STRIPE_API_URL`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private async answer(req: IncomingMessage): Promise<{ status: number; body: unknown }> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const url = new URL(req.url!, 'http://standin');
    const key = req.headers['idempotency-key'] as string | undefined;
    const form = Object.fromEntries(new URLSearchParams(raw));
    this.requests.push({ method: req.method!, path: url.pathname, idempotencyKey: key, form });
    if (!/^Bearer sk_/.test(req.headers.authorization ?? '')) return error(401, 'authentication_error', 'Invalid API Key provided');
    if (req.method === 'POST' && key) {
      const seen = this.byKey.get(key);
      if (seen) {
        return seen.body === raw
          ? { status: 200, body: seen.answer }
          : error(400, 'idempotency_error', 'Keys for idempotent requests can only be used with the same parameters they were first used with.');
      }
    }
    let result: { status: number; body: unknown };
    if (req.method === 'POST' && url.pathname === '/v1/checkout/sessions') result = { status: 200, body: this.createSession(form) };
    else if (req.method === 'POST' && url.pathname === '/v1/accounts') result = { status: 200, body: this.createAccount(form) };
    else if (req.method === 'POST' && url.pathname === '/v1/account_links') result = this.createAccountLink(form);
    else if (req.method === 'POST' && url.pathname === '/v1/transfers') result = this.createTransfer(form);
    else if (req.method === 'GET' && url.pathname === '/v1/checkout/sessions') result = { status: 200, body: this.list(url, [...this.sessions.values()]) };
    else if (req.method === 'GET' && url.pathname === '/v1/transfers') result = { status: 200, body: this.list(url, this.transfers) };
    else {
      const m = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(url.pathname);
      const found = m && req.method === 'GET' ? this.sessions.get(decodeURIComponent(m[1]!)) : undefined;
      result = found ? { status: 200, body: found } : error(404, 'invalid_request_error', `No such checkout.session: '${m?.[1] ?? url.pathname}'`);
    }
    if (req.method === 'POST' && key && result.status === 200) this.byKey.set(key, { body: raw, answer: result.body });
    return result;
  }

  /** A list of `items` made within `created[gte]`…`created[lt]`, newest first, on one page. */
  private list(url: URL, items: Array<{ created: number }>) {
    const gte = Number(url.searchParams.get('created[gte]') ?? 0);
    const lt = Number(url.searchParams.get('created[lt]') ?? Number.MAX_SAFE_INTEGER);
    const data = items.filter((i) => i.created >= gte && i.created < lt).sort((a, b) => b.created - a.created);
    return { object: 'list', url: url.pathname, has_more: false, data };
  }

  private createSession(form: Record<string, string>): Stripe.Checkout.Session {
    const id = `cs_test_${randomBytes(12).toString('hex')}`;
    const quantity = Number(form['line_items[0][quantity]'] ?? 1);
    const session = {
      id, object: 'checkout.session', mode: form['mode'], status: 'open', payment_status: 'unpaid',
      amount_total: Number(form['line_items[0][price_data][unit_amount]']) * quantity, amount_subtotal: Number(form['line_items[0][price_data][unit_amount]']) * quantity,
      currency: form['line_items[0][price_data][currency]'], client_reference_id: form['client_reference_id'] ?? null,
      metadata: metadataOf(form),
      success_url: form['success_url'], cancel_url: form['cancel_url'], url: `https://checkout.stripe.com/c/pay/${id}`,
      created: Math.floor(Date.now() / 1000), expires_at: Math.floor(Date.now() / 1000) + 86_400, livemode: false,
    } as unknown as Stripe.Checkout.Session;
    this.sessions.set(id, session);
    return session;
  }

  readonly accounts = new Map<string, { id: string; object: 'account'; type: string; metadata: Record<string, string>; payouts_enabled: boolean }>();
  readonly transfers: Array<Stripe.Transfer> = [];

  private createAccount(form: Record<string, string>) {
    const account = { id: `acct_${randomBytes(8).toString('hex')}`, object: 'account' as const, type: form['type'] ?? 'express', metadata: metadataOf(form), payouts_enabled: false };
    this.accounts.set(account.id, account);
    return account;
  }

  private createAccountLink(form: Record<string, string>): { status: number; body: unknown } {
    const account = this.accounts.get(form['account'] ?? '');
    if (!account) return error(400, 'invalid_request_error', `No such account: '${form['account']}'`);
    return { status: 200, body: { object: 'account_link', created: Math.floor(Date.now() / 1000), expires_at: Math.floor(Date.now() / 1000) + 300, url: `https://connect.stripe.com/setup/e/${account.id}/${randomBytes(6).toString('hex')}` } };
  }

  /** The connected account finished its onboarding: it can receive transfers. */
  onboard(accountId: string): void {
    this.accounts.get(accountId)!.payouts_enabled = true;
  }

  private createTransfer(form: Record<string, string>): { status: number; body: unknown } {
    const account = this.accounts.get(form['destination'] ?? '');
    if (!account) return error(400, 'invalid_request_error', `No such destination: '${form['destination']}'`);
    if (!account.payouts_enabled) return error(400, 'invalid_request_error', 'Your destination account needs to have at least one of the following capabilities enabled: transfers, crypto_transfers, legacy_payments');
    const transfer = {
      id: `tr_${randomBytes(12).toString('hex')}`, object: 'transfer', amount: Number(form['amount']), currency: form['currency'], destination: account.id,
      metadata: metadataOf(form), created: Math.floor(Date.now() / 1000), livemode: false, reversed: false, amount_reversed: 0,
    } as unknown as Stripe.Transfer;
    this.transfers.push(transfer);
    return { status: 200, body: transfer };
  }

  /** The payer pays: the session completes, paid (or, `async`, completes with the payment still on its way). */
  pay(id: string, opts: { async?: boolean } = {}): Stripe.Checkout.Session {
    const s = this.sessions.get(id)!;
    Object.assign(s, { status: 'complete', payment_status: opts.async ? 'unpaid' : 'paid' });
    return { ...s };
  }

  /** An async payment (a bank debit) arrives in the end. */
  settleAsync(id: string): Stripe.Checkout.Session {
    return Object.assign(this.sessions.get(id)!, { payment_status: 'paid' });
  }

  /** The session closes unpaid. */
  expire(id: string): Stripe.Checkout.Session {
    return Object.assign(this.sessions.get(id)!, { status: 'expired' });
  }

  /** An event as Stripe sends it, about `session` as it is now (or as given). */
  event(type: string, session: Stripe.Checkout.Session): string {
    return JSON.stringify({
      id: `evt_${randomBytes(12).toString('hex')}`, object: 'event', type, api_version: '2025-01-27.acacia', created: Math.floor(Date.now() / 1000),
      livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, data: { object: session },
    });
  }

  /** The `Stripe-Signature` header Stripe would send with `payload` (at `timestamp`, seconds). */
  sign(payload: string, opts: { secret?: string; timestamp?: number } = {}): string {
    return this.sdk.webhooks.generateTestHeaderString({ payload, secret: opts.secret ?? this.webhookSecret, ...(opts.timestamp ? { timestamp: opts.timestamp } : {}) });
  }
}

const error = (status: number, type: string, message: string) => ({ status, body: { error: { type, message } } });

/** `metadata[key]` form fields as the object they encode. */
const metadataOf = (form: Record<string, string>) => Object.fromEntries(Object.entries(form).filter(([k]) => k.startsWith('metadata[')).map(([k, v]) => [k.slice(9, -1), v]));
