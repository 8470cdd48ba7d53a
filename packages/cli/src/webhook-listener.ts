import { createServer, type IncomingMessage } from 'node:http';
import { verifyWebhook, WebhookVerificationError, type ExchangeClient } from '@agent-exchange/client';
import { ok } from './exchange-outcome.js';
import { CliError, EXIT } from './exit-codes.js';
import type { Io } from './io.js';

export interface ListenOptions {
  agentId: string;
  host: string;
  port: number;
  /** The URL the exchange is told to call; default `http://{host}:{port}/webhooks`. */
  publicUrl?: string;
  /** Every verified delivery is sent on to this URL, headers and raw body as received. */
  forwardTo?: string;
  /** Leave the agent's webhook URL pointing here on exit (default: put the previous one back). */
  keep: boolean;
  json: boolean;
  /** Resolves when the listener should stop (a signal). */
  until: Promise<void>;
}

const MAX_BODY = 1024 * 1024;

/**
 * `aex listen`: a local receiver for the agent's webhooks, like `stripe listen`. It points the
 * agent's webhookUrl at itself, verifies every delivery's Standard Webhooks signature with the
 * agent's secret (refusing with 400 what does not verify, so nothing forged is printed or
 * forwarded), prints each event, forwards it when asked, and on exit puts the previous URL back.
 */
export async function listen(client: ExchangeClient, io: Io, opts: ListenOptions): Promise<void> {
  const agent = ok(await client.getAgent(opts.agentId));
  if (!('webhookUrl' in agent)) throw new CliError('Only an agent of your own account can be listened for.', EXIT.usage);
  const previous = agent.webhookUrl;
  let secrets: string[] = [];
  const seen = new Set<string>();

  const server = createServer((req, res) => {
    void receive(req).then(
      ({ status, line }) => {
        if (line) io.out(`${line}\n`);
        res.writeHead(status, { 'content-type': 'text/plain' }).end();
      },
      (err: unknown) => {
        io.err(`aex listen: ${(err as Error).message}\n`);
        res.writeHead(500).end();
      },
    );
  });

  async function receive(req: IncomingMessage): Promise<{ status: number; line?: string }> {
    if (req.method !== 'POST') return { status: 405 };
    const body = await readBody(req);
    if (body === null) return { status: 413, line: refused(opts.json, 'body over 1 MiB') };
    let event: ReturnType<typeof verifyWebhook> | undefined;
    let why = 'no secret yet';
    for (const secret of secrets) {
      try {
        event = verifyWebhook(req.headers, body, secret);
        break;
      } catch (err) {
        if (!(err instanceof WebhookVerificationError)) throw err;
        why = err.message;
      }
    }
    if (!event) return { status: 400, line: refused(opts.json, why) };
    const webhookId = String(req.headers['webhook-id']);
    const repeat = seen.has(webhookId);
    seen.add(webhookId);
    let forwarded: number | string | undefined;
    if (opts.forwardTo) forwarded = await forward(opts.forwardTo, req, body);
    const data = event.data as { transactionId?: string; sessionId?: string; status?: string };
    const line = opts.json
      ? JSON.stringify({ webhookId, type: event.type, timestamp: event.timestamp, verified: true, repeat, data: event.data, ...(forwarded !== undefined ? { forwarded } : {}) })
      : [new Date().toISOString(), 'verified', event.type, data.transactionId ?? data.sessionId ?? '-', data.status ?? '', repeat ? '(repeat)' : '', forwarded !== undefined ? `→ ${forwarded}` : ''].filter(Boolean).join('  ');
    // A forward that failed is answered 502, so the exchange delivers the event again later.
    return { status: typeof forwarded === 'number' && forwarded >= 300 ? 502 : typeof forwarded === 'string' ? 502 : 200, line };
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(new CliError(`Cannot listen on ${opts.host}:${opts.port}: ${err.code ?? err.message}.`, EXIT.usage)));
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  const url = opts.publicUrl ?? `http://${opts.host}:${port}/webhooks`;
  try {
    ok(await client.updateAgent(opts.agentId, { webhookUrl: url }));
    const hook = ok(await client.getWebhook(opts.agentId));
    secrets = hook.secret ? [hook.secret] : [];
    io.err(`Ready: webhooks of agent ${opts.agentId} now go to ${url}; each is verified with its signing secret${opts.forwardTo ? ` and forwarded to ${opts.forwardTo}` : ''}. Ctrl-C to stop.\n`);
    await opts.until;
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    if (!opts.keep) {
      const restored = await client.updateAgent(opts.agentId, { webhookUrl: previous ?? null });
      io.err(restored.ok ? `Stopped: the webhook URL is back to ${previous ?? 'none'}.\n` : `Stopped, but the webhook URL could not be put back (${restored.error.message}); it still points here.\n`);
    }
  }
}

function refused(json: boolean, why: string): string {
  return json ? JSON.stringify({ verified: false, refused: why }) : `${new Date().toISOString()}  refused  ${why}`;
}

async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function forward(target: string, req: IncomingMessage, body: string): Promise<number | string> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const v = req.headers[name];
    if (typeof v === 'string') headers[name] = v;
  }
  try {
    const res = await fetch(target, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(15_000) });
    await res.arrayBuffer();
    return res.status;
  } catch (err) {
    return `failed: ${(err as Error).message}`;
  }
}
