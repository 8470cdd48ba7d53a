#!/usr/bin/env node
// A webhook receiver with no dependencies: verifies each Standard Webhooks signature the exchange
// sends (HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}" with the agent's whsec_ secret),
// prints the event, and answers 204 — or 400 when the signature or timestamp is wrong.
//
//   WEBHOOK_SECRET=whsec_… node examples/webhook-receiver.mjs [port]     (default port 9000)
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const secret = process.env.WEBHOOK_SECRET;
if (!secret?.startsWith('whsec_')) {
  console.error('Set WEBHOOK_SECRET to the agent\'s webhook secret (GET /v1/agents/{id}/webhook → data.secret).');
  process.exit(2);
}
const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
const port = Number(process.argv[2] ?? 9000);
const seen = new Set();

function verified(headers, body) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures) return 'missing webhook-id, webhook-timestamp or webhook-signature';
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return 'webhook-timestamp is more than 5 minutes away';
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  // During a secret rotation two signatures arrive, space-separated: either may match.
  const ok = signatures.split(' ').some((s) => {
    const given = Buffer.from(s.replace(/^v1,/, ''), 'base64');
    return s.startsWith('v1,') && given.length === expected.length && timingSafeEqual(given, expected);
  });
  return ok ? null : 'no signature matches the secret';
}

createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const problem = verified(req.headers, body);
    if (problem) {
      console.log(`refused: ${problem}`);
      res.writeHead(400).end();
      return;
    }
    // A delivery may come more than once (retries keep the webhook-id): act on each id once.
    const id = req.headers['webhook-id'];
    if (!seen.has(id)) {
      seen.add(id);
      const event = JSON.parse(body);
      console.log(`verified ${event.type} ${event.data.transactionId ?? ''} ${event.data.status ?? ''}`.trim());
    }
    res.writeHead(204).end();
  });
}).listen(port, '127.0.0.1', () => console.log(`receiving webhooks on http://127.0.0.1:${port}/`));
