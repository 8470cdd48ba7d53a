import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@aex/platform';
import { eventually } from '@aex/platform/testing';
import { installPacked } from './packed-kit.js';

// D24.4: the MCP server's Streamable HTTP transport refuses a request whose Origin is present and not
// allowed (403, a JSON-RPC error without id), as the MCP specification asks of servers reachable from
// a browser (DNS rebinding). The packed bin, as people install it; initialize and ping never reach
// the exchange, so none runs here.

let dir: string;
let bin: string;
let url: string;
const children: ChildProcess[] = [];
const token = randomBytes(24).toString('hex');
const agentEnv = { AEX_URL: 'http://127.0.0.1:9', AEX_AGENT_ID: '7d0c5a0e-8f0e-4a57-9d53-7f7f5c1e2b9a', AEX_API_KEY: `ae_live_${'a'.repeat(43)}`, AEX_MCP_HTTP_TOKEN: token };

/** The bin with `args` and `env`: its stderr, and its exit code once it exits. */
function start(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [bin, '--http', ...args], { env: { PATH: process.env.PATH ?? '', HOME: dir, ...agentEnv, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  return { said: () => err, exited: () => child.exitCode };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'aex-mcp-origin-'));
  const project = await installPacked(['@agent-exchange/mcp'], dir);
  bin = join(project, 'node_modules', '@agent-exchange', 'mcp', 'bin', 'agent-exchange-mcp.js');
  const server = start(['--port', String(await freePort()), '--allowed-origin', 'https://app.example'], { AEX_MCP_ALLOWED_ORIGINS: 'https://tools.example, http://tools.example:8080/' });
  url = await eventually(async () => {
    if (server.exited() !== null) throw new Error(`exited ${server.exited()}: ${server.said()}`);
    return /listening on (http:\/\/\S+)/.exec(server.said())?.[1];
  }, 15_000);
});

afterAll(() => {
  for (const c of children) c.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };

/** A POST as a browser's page or a client sends it (fetch would set Origin itself). */
function post(headers: Record<string, string>, body: object = init): Promise<{ status: number; body: string; session: string | undefined }> {
  return new Promise((resolve, reject) => {
    const all = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...headers };
    const req = request(url, { method: 'POST', headers: all }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: text, session: res.headers['mcp-session-id'] as string | undefined }));
    });
    req.once('error', reject).end(JSON.stringify(body));
  });
}

describe('the MCP server over Streamable HTTP refuses other origins (D24.4)', () => {
  it('D24.4: an Origin not allowed is refused with 403 and a JSON-RPC error, before the token is looked at', async () => {
    const port = new URL(url).port;
    for (const origin of ['https://evil.example', `http://127.0.0.1.evil.example:${port}`, 'null', `https://127.0.0.1:${port}`, `http://127.0.0.1:${Number(port) + 1}`]) {
      const refused = await post({ origin });
      expect(refused.status, origin).toBe(403);
      expect(JSON.parse(refused.body)).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: `Forbidden: Origin ${origin} is not allowed (--allowed-origin).` }, id: null });
    }
    // A page learns nothing of the token either.
    expect((await post({ origin: 'https://evil.example', authorization: 'Bearer not-the-token' })).status).toBe(403);
    expect((await post({ origin: 'https://evil.example', authorization: '' })).status).toBe(403);
  });

  it('D24.4: the server\'s own origins and those allowed at launch (flag and variable) are accepted; no Origin is a client', async () => {
    const port = new URL(url).port;
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, 'https://app.example', 'https://tools.example', 'http://tools.example:8080']) {
      expect((await post({ origin })).status, origin).toBe(200);
    }
    expect((await post({})).status).toBe(200);
  });

  it('D24.4: a session opened by a client is refused to a page', async () => {
    const opened = await post({});
    expect(opened.status).toBe(200);
    const inSession = { 'mcp-session-id': opened.session!, 'mcp-protocol-version': '2025-06-18' };
    const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
    expect((await post({ ...inSession, origin: 'https://evil.example' }, ping)).status).toBe(403);
    expect((await post(inSession, ping)).status).toBe(200);
  });

  it('D24.4: an allowed origin that is not one (a path, another scheme) stops the server at launch', async () => {
    for (const given of ['https://app.example/console', 'ftp://app.example', 'app.example']) {
      const bad = start(['--port', String(await freePort()), '--allowed-origin', given]);
      await eventually(async () => bad.exited() === 2 || undefined, 15_000);
      expect(bad.said()).toContain(`--allowed-origin / AEX_MCP_ALLOWED_ORIGINS takes origins such as https://app.example or http://localhost:3000, without a path (got "${given}")`);
    }
  });
});
