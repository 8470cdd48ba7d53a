import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { describe, expect, vi } from 'vitest';
import { signWebhook } from '@agent-exchange/client';
import { AGENT_ID, cliTest, type Ran, type RunOptions, type Running } from './cli-test.js';
import { isSignedBy, type FakeExchange } from './fake-exchange.js';
import { agentView, TX_ID } from './views.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const EVENT = JSON.stringify({ type: 'transaction.delivered', timestamp: '2030-01-02T03:04:05.000Z', data: { transactionId: TX_ID, status: 'delivered' } });

/** The agent (its webhook URL `previous`), the change of that URL, and its signing secret. */
function answerListen(exchange: FakeExchange, previous: string | null = null): void {
  exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: agentView({ webhookUrl: previous }) });
  exchange.on('PATCH', `/v1/agents/${AGENT_ID}`, { data: agentView() });
  exchange.on('GET', `/v1/agents/${AGENT_ID}/webhook`, { data: { url: null, secret: SECRET } });
}

/** Starts `aex listen` and waits until it is ready: the URL it gave the exchange, and how to stop it. */
async function listening(startAex: (args: string[], opts?: RunOptions) => Running, exchange: FakeExchange, args: string[] = []) {
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const run = startAex(['listen', ...args], { stopped: () => stopped });
  await vi.waitFor(() => expect(run.stderr).toContain('Ready:'), { timeout: 5000 });
  const url = (exchange.sent('PATCH', `/v1/agents/${AGENT_ID}`)[0]!.body as { webhookUrl: string }).webhookUrl;
  const stopAndWait = (): Promise<Ran> => {
    stop();
    return run.done;
  };
  return { run, url, stop: stopAndWait };
}

/** Sends a webhook as the exchange does, signed with `secret`: the listener's HTTP status. */
async function sendWebhook(url: string, id: string, secret = SECRET, body = EVENT): Promise<number> {
  const timestamp = Math.floor(Date.now() / 1000);
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signWebhook(secret, id, timestamp, body) }, body });
  return res.status;
}

describe('aex listen', () => {
  cliTest('points the agent\'s webhook URL at its own receiver with a signed PATCH, and says it is ready', async ({ startAex, exchange, profile }) => {
    answerListen(exchange);
    const { run, url, stop } = await listening(startAex, exchange, ['--host', '127.0.0.1']);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/webhooks$/);
    expect(isSignedBy(exchange.sent('PATCH', `/v1/agents/${AGENT_ID}`)[0]!, profile.signingSecretKey)).toBe(true);
    expect(run.stderr).toBe(`Ready: webhooks of agent ${AGENT_ID} now go to ${url}; each is verified with its signing secret. Ctrl-C to stop.\n`);
    await stop();
  });

  cliTest('tells the exchange the --public-url instead of its own address', async ({ startAex, exchange, profile: _ }) => {
    answerListen(exchange);
    const { url, stop } = await listening(startAex, exchange, ['--public-url', 'https://tunnel.example/hooks']);
    expect(url).toBe('https://tunnel.example/hooks');
    await stop();
  });

  cliTest('prints a delivery signed with the agent\'s secret, and answers it 200', async ({ startAex, exchange, profile: _ }) => {
    answerListen(exchange);
    const { run, url, stop } = await listening(startAex, exchange);
    expect(await sendWebhook(url, 'msg_1')).toBe(200);
    expect(run.stdout).toMatch(new RegExp(`^\\S+Z {2}verified {2}transaction\\.delivered {2}${TX_ID} {2}delivered\\n$`));
    await stop();
  });

  cliTest('marks a delivery it has seen before as a repeat', async ({ startAex, exchange, profile: _ }) => {
    answerListen(exchange);
    const { run, url, stop } = await listening(startAex, exchange);
    await sendWebhook(url, 'msg_1');
    await sendWebhook(url, 'msg_1');
    expect(run.stdout.split('\n')[1]).toMatch(/ {2}delivered {2}\(repeat\)$/);
    await stop();
  });

  cliTest('refuses with 400 a delivery not signed with the agent\'s secret, printing why', async ({ startAex, exchange, profile: _ }) => {
    answerListen(exchange);
    const { run, url, stop } = await listening(startAex, exchange);
    expect(await sendWebhook(url, 'msg_forged', `whsec_${randomBytes(32).toString('base64')}`)).toBe(400);
    expect(run.stdout).toMatch(/^\S+Z {2}refused {2}no webhook-signature matches the secret\n$/);
    await stop();
  });

  cliTest('answers 405 to anything but a POST', async ({ startAex, exchange, profile: _ }) => {
    answerListen(exchange);
    const { url, stop } = await listening(startAex, exchange);
    expect((await fetch(url)).status).toBe(405);
    await stop();
  });

  cliTest('with --json prints each delivery as one JSON line', async ({ startAex, exchange, profile: _ }) => {
    answerListen(exchange);
    const { run, url, stop } = await listening(startAex, exchange, ['--json']);
    await sendWebhook(url, 'msg_1');
    expect(JSON.parse(run.stdout)).toEqual({ webhookId: 'msg_1', type: 'transaction.delivered', timestamp: '2030-01-02T03:04:05.000Z', verified: true, repeat: false, data: { transactionId: TX_ID, status: 'delivered' } });
    await stop();
  });

  cliTest('forwards a verified delivery with its signature headers and raw body, printing the answer', async ({ startAex, exchange, profile: _ }) => {
    const forwarded: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
    const sink = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString())).on('end', () => {
        forwarded.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    try {
      answerListen(exchange);
      const { run, url, stop } = await listening(startAex, exchange, ['--forward-to', `http://127.0.0.1:${(sink.address() as { port: number }).port}/hooks`]);
      expect(await sendWebhook(url, 'msg_1')).toBe(200);
      expect(forwarded).toEqual([{ headers: expect.objectContaining({ 'webhook-id': 'msg_1', 'webhook-signature': expect.stringMatching(/^v1,/) }), body: EVENT }]);
      expect(run.stdout).toMatch(/ {2}→ 204\n$/);
      await stop();
    } finally {
      await new Promise<void>((resolve) => sink.close(() => resolve()));
    }
  });

  cliTest('answers 502 when the forward fails, so the exchange delivers again later', async ({ startAex, exchange, profile: _ }) => {
    answerListen(exchange);
    const { run, url, stop } = await listening(startAex, exchange, ['--forward-to', `${exchange.url}/nowhere`]);
    expect(await sendWebhook(url, 'msg_1')).toBe(502);
    expect(run.stdout).toMatch(/ {2}→ 404\n$/);
    await stop();
  });

  cliTest('when stopped, puts the previous webhook URL back and ends with exit 0', async ({ startAex, exchange, profile: _ }) => {
    answerListen(exchange, 'https://hooks.example/old');
    const { stop } = await listening(startAex, exchange);
    const r = await stop();
    expect(exchange.sent('PATCH', `/v1/agents/${AGENT_ID}`).map((q) => q.body)).toEqual([{ webhookUrl: expect.stringMatching(/^http:/) }, { webhookUrl: 'https://hooks.example/old' }]);
    expect([r.code, r.stderr.split('\n')[1]]).toEqual([0, 'Stopped: the webhook URL is back to https://hooks.example/old.']);
  });

  cliTest('--keep leaves the webhook URL pointing at it when stopped', async ({ startAex, exchange, profile: _ }) => {
    answerListen(exchange, 'https://hooks.example/old');
    const { stop } = await listening(startAex, exchange, ['--keep']);
    await stop();
    expect(exchange.sent('PATCH', `/v1/agents/${AGENT_ID}`)).toHaveLength(1);
  });

  cliTest('--agent listens for another agent of the account', async ({ startAex, exchange, profile: _ }) => {
    exchange.on('GET', '/v1/agents/worker', { data: agentView({ id: 'worker', webhookUrl: null }) });
    exchange.on('PATCH', '/v1/agents/worker', { data: agentView({ id: 'worker' }) });
    exchange.on('GET', '/v1/agents/worker/webhook', { data: { url: null, secret: SECRET } });
    let stop!: () => void;
    const run = startAex(['listen', '--agent', 'worker'], { stopped: () => new Promise<void>((resolve) => (stop = resolve)) });
    await vi.waitFor(() => expect(run.stderr).toContain('Ready: webhooks of agent worker'), { timeout: 5000 });
    stop();
    expect((await run.done).code).toBe(0);
  });

  cliTest('refuses to listen for an agent of another account', async ({ startAex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: { id: AGENT_ID, name: 'Someone else' } });
    const r = await startAex(['listen']).done;
    expect([r.code, r.stderr]).toEqual([2, 'aex: Only an agent of your own account can be listened for.\n']);
    expect(exchange.sent('PATCH', `/v1/agents/${AGENT_ID}`)).toEqual([]);
  });
});
