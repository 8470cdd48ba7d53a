import { readdirSync, readFileSync } from 'node:fs';
import { extname, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, hashApiKey } from '@aex/contracts';
import type { ExchangeConfig } from '@aex/platform';
import { checkAdminToken } from '../guards/auth.js';
import { send, type Guards } from '../http/pipeline.js';
import { successBody } from '../http/envelope.js';
import { ownerOfLink, serveSignInLinks } from './sign-in-links.js';
import { CONSOLE_COOKIE, cookieOf, requireCsrf, sessionCookie, sha256, SESSION_IDLE_MS, type ConsoleSession } from './sessions.js';
import { liveSession, secureCookie } from './session-liveness.js';

/** The console's files beside the gateway's sources (in a clone and in the image alike): no build step. */
const CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));
/** The kinds of file the console is made of; a file of any other kind in its folder is not served. */
const CONTENT_TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

/**
 * Every file of the console by its path under `/console/` (`pages/approvals.js`), with its content
 * type, read once at start: a page module added to the folder is served without a list to keep.
 */
function consoleFiles(): Map<string, { type: string; body: Buffer }> {
  const files = new Map<string, { type: string; body: Buffer }>();
  for (const name of readdirSync(CONSOLE_DIR, { recursive: true, encoding: 'utf8' })) {
    const type = CONTENT_TYPES[extname(name)];
    if (type) files.set(name.split(sep).join('/'), { type, body: readFileSync(CONSOLE_DIR + name) });
  }
  return files;
}

/**
 * What every console page is served with: scripts, styles and connections from this origin only
 * (no inline script or style, nothing framed), no referrer, no sniffing.
 */
export const CONSOLE_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

const SIGN_IN_FIELDS = new Set(['apiKey', 'operatorToken', 'link']);

/**
 * The web console (docs/console.md): its page and files at `/console/`, and its sessions at
 * `/console/api/session` — signing in with the owner agent's API key, a one-time sign-in link made
 * with that key (`/console/api/sign-in-links`, D23.4) or the operator token once, reading the
 * session (and its CSRF token) back, signing out. Everything else the console does goes
 * through the API's own routes with the session's cookie (pipeline.ts `callerOf`).
 */
export function serveConsole(app: FastifyInstance, guards: Guards, config: ExchangeConfig): void {
  const files = consoleFiles();
  const asset = (name: string) => {
    const file = files.get(name)!;
    return async (_req: FastifyRequest, reply: FastifyReply) => reply.headers(CONSOLE_HEADERS).type(file.type).send(file.body);
  };
  app.get('/console', async (_req, reply) => reply.redirect('/console/', 308));
  // The page is the folder itself; its scripts and style are each at their own path.
  app.get('/console/', asset('index.html'));
  for (const name of files.keys()) if (name !== 'index.html') app.get(`/console/${name}`, asset(name));

  const secure = (req: FastifyRequest) => secureCookie(req, config);
  const answer = (req: FastifyRequest, reply: FastifyReply, status: number, data: unknown) => {
    reply.header('cache-control', 'no-store').header('vary', 'Cookie');
    return send(reply, status, successBody(data, req.id));
  };
  const view = (s: ConsoleSession) => ({ kind: s.kind, agentId: s.agentId ?? null, accountId: s.accountId ?? null, csrfToken: s.csrf, idleMinutes: SESSION_IDLE_MS / 60_000 });

  // Sign in: the key or token once; what the browser keeps is the session's cookie.
  app.post('/console/api/session', async (req, reply) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const given = Object.keys(body);
    const unknown = given.find((k) => !SIGN_IN_FIELDS.has(k));
    if (unknown) throw new AppError('VALIDATION_ERROR', `Unknown field ${unknown}: give apiKey, link or operatorToken.`, { field: `/body/${unknown}` });
    if (given.length !== 1 || typeof body[given[0]!] !== 'string') throw new AppError('VALIDATION_ERROR', 'Give one of apiKey (your owner agent\'s API key), link (a sign-in link\'s token) or operatorToken, as a string.', { field: '/body' });
    // A wrong key, link or token takes from the address's failed-authentication limit, as a bearer one would (D24.1).
    let opened;
    if (typeof body.apiKey === 'string') {
      const principal = await guards.auth.authenticate(`Bearer ${body.apiKey}`, req.id, req.ip);
      if (!principal.isOwner) throw new AppError('FORBIDDEN', 'Sign in with your account\'s owner agent\'s API key: the console acts for the whole account.');
      if (principal.status !== 'active') throw new AppError('AGENT_INACTIVE', 'This agent is not active.');
      opened = await guards.console.open({ kind: 'owner', keyHash: hashApiKey(body.apiKey), agentId: principal.agentId, accountId: principal.accountId });
    } else if (typeof body.link === 'string') {
      opened = await guards.console.open({ kind: 'owner', ...await ownerOfLink(guards, body.link, req) });
    } else {
      if (!config.ADMIN_TOKEN) throw new AppError('NOT_FOUND', 'The operator API is off on this exchange: it needs ADMIN_TOKEN set.');
      await checkAdminToken(config.ADMIN_TOKEN, body.operatorToken as string, guards.failures, req.ip);
      opened = await guards.console.open({ kind: 'operator', tokenHash: sha256(body.operatorToken as string) });
    }
    reply.header('set-cookie', sessionCookie(opened.id, secure(req)));
    return answer(req, reply, 201, view(opened.session));
  });

  serveSignInLinks(app, guards, config, answer);

  // Read back: only while its key or token still holds, else it ends here (D24.3).
  app.get('/console/api/session', async (req, reply) => {
    const live = await liveSession(req, reply, guards, config);
    if (!live) throw new AppError('UNAUTHENTICATED', 'Not signed in.');
    return answer(req, reply, 200, view(live.session));
  });

  // Sign out: the session ends on every gateway, and the cookie is cleared.
  app.delete('/console/api/session', async (req, reply) => {
    const id = cookieOf(req.headers.cookie, CONSOLE_COOKIE);
    const session = await guards.console.find(id);
    if (!session) throw new AppError('UNAUTHENTICATED', 'Not signed in.');
    const csrf = req.headers['x-csrf-token'];
    requireCsrf(typeof csrf === 'string' ? csrf : undefined, session);
    await guards.console.close(id!);
    reply.header('set-cookie', sessionCookie(null, secure(req)));
    return answer(req, reply, 200, { signedOut: true });
  });
}
