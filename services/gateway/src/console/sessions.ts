import { createHash, randomBytes } from 'node:crypto';
import { AppError, names } from '@aex/contracts';
import { KvConflictError, sameSecret, withinBudget, type Bus, type KvStore } from '@aex/platform';

/**
 * Sessions of the web console (docs/console.md). The browser holds only an unguessable session id,
 * in an `HttpOnly`, `SameSite=Strict` cookie (`Secure` over https); the gateways share the sessions
 * in a NATS KV bucket, keyed by the id's SHA-256, holding no secret: an owner's session keeps the
 * hash of the API key it signed in with — authorized afresh on every request exactly as that key
 * would be, so a rotated or revoked key ends it — and an operator's the hash of the operator token
 * it signed in with, which must still be the deployment's. Each session has its own CSRF token,
 * required on every request that changes something.
 */

export const CONSOLE_COOKIE = 'aex_console';
/** A session unused this long ends (the bucket's TTL; a use renews it at most once a minute). */
export const SESSION_IDLE_MS = 30 * 60_000;
/** And none outlives this, used or not. */
export const SESSION_MAX_MS = 12 * 60 * 60_000;
const RENEW_AFTER_MS = 60_000;
/** A read of the bucket is tried for this long (a leader election after a NATS node is lost), each try at most `READ_ATTEMPT_MS`. */
const READ_BUDGET_MS = 10_000;
const READ_ATTEMPT_MS = 750;

export interface ConsoleSession {
  kind: 'owner' | 'operator';
  /** Owner: the SHA-256 of the owner agent's API key (what the API authenticates by). */
  keyHash?: string;
  /** Operator: the SHA-256 of the operator token signed in with. */
  tokenHash?: string;
  agentId?: string;
  accountId?: string;
  csrf: string;
  createdAt: number;
  seenAt: number;
}

/** D23.4: a sign-in link (`aex console`) works this long after it is made, and once. */
export const SIGN_IN_LINK_MS = 2 * 60_000;
/** What a link's entry holds once it has been used: a second use, on any gateway, finds it. */
const USED_LINK = 'used';

/** A sign-in link's entry: for whom it opens a session, and until when. */
export interface SignInLink {
  /** The SHA-256 of the API key it was made with: a key rotated since makes it useless. */
  keyHash: string;
  agentId: string;
  accountId: string;
  expiresAt: number;
}

export const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** 403 unless a request that changes something carries the session's CSRF token (`X-CSRF-Token`). */
export function requireCsrf(given: string | undefined, session: ConsoleSession): void {
  if (!sameSecret(given ?? '', session.csrf)) throw new AppError('FORBIDDEN', 'The request\'s CSRF token is missing or wrong; reload the console.', { details: { reason: 'csrf' } });
}

export class ConsoleSessions {
  private constructor(private readonly kv: KvStore) {}

  static async create(bus: Bus): Promise<ConsoleSessions> {
    return new ConsoleSessions(await bus.kv(names.bucket(bus.namespace, 'console_sessions'), { ttlMs: SESSION_IDLE_MS }));
  }

  /** A new session: its id, for the cookie (never stored), and the session. */
  async open(fields: Omit<ConsoleSession, 'csrf' | 'createdAt' | 'seenAt'>): Promise<{ id: string; session: ConsoleSession }> {
    const id = randomBytes(32).toString('base64url');
    const now = Date.now();
    const session: ConsoleSession = { ...fields, csrf: randomBytes(24).toString('base64url'), createdAt: now, seenAt: now };
    await this.kv.put(sha256(id), JSON.stringify(session));
    return { id, session };
  }

  /** The session of a cookie's id, renewed; null when there is none or it ended. */
  async find(id: string | undefined): Promise<ConsoleSession | null> {
    if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) return null;
    const entry = await withinBudget(() => this.kv.get(sha256(id)), { attemptMs: READ_ATTEMPT_MS, budgetMs: READ_BUDGET_MS, store: 'the console sessions' }).catch(() => {
      throw new AppError('SERVICE_UNAVAILABLE', 'The console sessions cannot be read just now; retry in a moment.', { details: { retryAfterSeconds: 1 } });
    });
    if (!entry) return null;
    const session = JSON.parse(entry.value) as ConsoleSession;
    const now = Date.now();
    if (now - session.createdAt > SESSION_MAX_MS) {
      await this.close(id);
      return null;
    }
    // Not waited for: a renewal that fails (the bucket electing its leader) is made by a later request.
    if (now - session.seenAt > RENEW_AFTER_MS) void this.kv.put(sha256(id), JSON.stringify({ ...session, seenAt: now })).catch(() => undefined);
    return session;
  }

  /**
   * D23.4: a one-time sign-in link's token (32 random bytes, base64url), never stored: the bucket
   * keeps its SHA-256, under a key of its own kind (`link.`), so it is never a session's id.
   */
  async issueLink(fields: Omit<SignInLink, 'expiresAt'>): Promise<{ token: string; expiresAt: number }> {
    const token = randomBytes(32).toString('base64url');
    const expiresAt = Date.now() + SIGN_IN_LINK_MS;
    await this.kv.create(linkKey(token), JSON.stringify({ ...fields, expiresAt } satisfies SignInLink));
    return { token, expiresAt };
  }

  /**
   * The link of a token, claimed by a compare-and-set on its entry, so that of two uses at once —
   * on one gateway or two — one gets it; null when it is unknown, used or expired.
   */
  async claimLink(token: string): Promise<SignInLink | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
    const key = linkKey(token);
    const entry = await this.kv.getLatest(key);
    if (!entry || entry.value === USED_LINK) return null;
    try {
      await this.kv.update(key, USED_LINK, entry.revision);
    } catch (err) {
      if (err instanceof KvConflictError) return null;
      throw err;
    }
    const link = JSON.parse(entry.value) as SignInLink;
    return Date.now() < link.expiresAt ? link : null;
  }

  /** Ends the session on every gateway. */
  async close(id: string): Promise<void> {
    await this.kv.delete(sha256(id));
  }
}

const linkKey = (token: string) => `link.${sha256(token)}`;

/** The value of cookie `name` in a Cookie header. */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The Set-Cookie of a session id (or of its removal, with `id` null). */
export function sessionCookie(id: string | null, secure: boolean): string {
  const attributes = ['Path=/', 'HttpOnly', 'SameSite=Strict', ...(secure ? ['Secure'] : [])];
  return id === null ? [`${CONSOLE_COOKIE}=`, 'Max-Age=0', ...attributes].join('; ') : [`${CONSOLE_COOKIE}=${id}`, ...attributes].join('; ');
}
