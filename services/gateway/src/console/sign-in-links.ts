import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, hashApiKey } from '@aex/contracts';
import { bearerToken, type ExchangeConfig } from '@aex/platform';
import { RateLimitedError } from '../guards/rate-limit.js';
import type { Guards } from '../http/pipeline.js';

type Answer = (req: FastifyRequest, reply: FastifyReply, status: number, data: unknown) => unknown;

/**
 * D23.4: `POST /console/api/sign-in-links` makes a one-time sign-in link for the owner agent whose
 * API key authenticates the request (the CLI's `aex console`): a person opens it in a browser and
 * is signed in without seeing the key. The token is in the address's fragment, which a browser
 * never sends: it reaches no server log and no Referer. The console's sign-in page trades it for a
 * session (`POST /console/api/session` with `{ link }`, `ownerOfLink`).
 */
export function serveSignInLinks(app: FastifyInstance, guards: Guards, config: ExchangeConfig, answer: Answer): void {
  app.post('/console/api/sign-in-links', async (req, reply) => {
    const authorization = req.headers.authorization;
    const principal = await guards.auth.authenticate(authorization, req.id, req.ip);
    const limited = await guards.limiter.decide('write', principal.agentId);
    if (!limited.allowed) throw new RateLimitedError('Too many requests; retry later.', limited);
    if (!principal.isOwner) throw new AppError('FORBIDDEN', 'Only your account\'s owner agent may make a sign-in link: the console acts for the whole account.');
    if (principal.status !== 'active') throw new AppError('AGENT_INACTIVE', 'This agent is not active.');
    const link = await guards.console.issueLink({ keyHash: hashApiKey(bearerToken(authorization)!), agentId: principal.agentId, accountId: principal.accountId });
    return answer(req, reply, 201, { url: `${config.PUBLIC_BASE_URL}/console/#/signin?link=${link.token}`, expiresAt: new Date(link.expiresAt).toISOString() });
  });
}

/**
 * D23.4: whom a sign-in link signs in, claimed once (a second use fails, on any gateway); the key it
 * was made with must still be the owner agent's, so a key rotated since makes it useless.
 */
export async function ownerOfLink(guards: Guards, token: string, req: FastifyRequest): Promise<{ keyHash: string; agentId: string; accountId: string }> {
  const link = await guards.console.claimLink(token);
  // A link that is not (or no longer) one is a failed secret like a wrong key (D24.1).
  if (!link) return guards.failures.failed(req.ip, new AppError('UNAUTHENTICATED', 'This sign-in link has been used or has expired: make another (aex console) or sign in with the key.'));
  const principal = await guards.auth.authenticateHash(link.keyHash, req.id, req.ip).catch((err: unknown) => {
    if (err instanceof AppError && err.code === 'UNAUTHENTICATED') throw new AppError('UNAUTHENTICATED', 'The API key this sign-in link was made with has been rotated or revoked: make another (aex console).');
    throw err;
  });
  if (!principal.isOwner || principal.agentId !== link.agentId) throw new AppError('FORBIDDEN', 'This sign-in link is not the owner agent\'s.');
  if (principal.status !== 'active') throw new AppError('AGENT_INACTIVE', 'This agent is not active.');
  return { keyHash: link.keyHash, agentId: principal.agentId, accountId: principal.accountId };
}
