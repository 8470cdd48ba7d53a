import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type Principal } from '@aex/contracts';
import type { ExchangeConfig } from '@aex/platform';
import type { ApiKeyAuthenticator } from '../guards/auth.js';
import { CONSOLE_COOKIE, cookieOf, sessionCookie, sha256, type ConsoleSession, type ConsoleSessions } from './sessions.js';

/** The cookie is `Secure` when the exchange is reached over https. */
export const secureCookie = (req: FastifyRequest, config: ExchangeConfig) => req.protocol === 'https' || config.PUBLIC_BASE_URL.startsWith('https:');

/**
 * D24.3: the cookie's console session while what it signed in with still holds — for an owner, its
 * key still authenticating an active owner agent (the principal is returned); for an operator, the
 * deployment's ADMIN_TOKEN still the token it signed in with. Otherwise the session ends: deleted
 * from the bucket every replica shares, its cookie cleared on `reply`, and 401. Null when the cookie
 * names no session.
 */
export async function liveSession(
  req: FastifyRequest, reply: FastifyReply, guards: { auth: ApiKeyAuthenticator; console: ConsoleSessions }, config: ExchangeConfig,
): Promise<{ session: ConsoleSession; principal: Principal | null } | null> {
  const id = cookieOf(req.headers.cookie, CONSOLE_COOKIE);
  const session = await guards.console.find(id);
  if (!session) return null;
  const end = async (why: string): Promise<never> => {
    await guards.console.close(id!);
    reply.header('set-cookie', sessionCookie(null, secureCookie(req, config)));
    throw new AppError('UNAUTHENTICATED', `The console session has ended: ${why}. Sign in again.`);
  };
  if (session.kind === 'operator') {
    if (!config.ADMIN_TOKEN || session.tokenHash !== sha256(config.ADMIN_TOKEN)) await end('the operator token has changed');
    return { session, principal: null };
  }
  let principal: Principal;
  try {
    principal = await guards.auth.authenticateHash(session.keyHash!, req.id, req.ip);
  } catch (err) {
    if (err instanceof AppError && err.code === 'UNAUTHENTICATED') await end('the owner agent\'s key was rotated or revoked');
    throw err;
  }
  if (principal.status !== 'active' || !principal.isOwner) await end('the owner agent is no longer active');
  return { session, principal };
}
