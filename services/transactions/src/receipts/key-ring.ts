import { createPrivateKey, createPublicKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { didWebFor, exchangeDidOf, type ReceiptClaims, type ReceiptJwk, type ReceiptKeysView, type ReceiptPayload } from '@aex/contracts';
import type { Logger, UnitOfWork } from '@aex/platform';
import { calculateJwkThumbprint, CompactSign, FlattenedSign } from 'jose';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, ReceiptKeyRow } from '../db/schema.js';
import type { ReceiptIssuer } from '../purchases/repository.js';

/** PKCS #8 DER of an Ed25519 private key, before its 32-byte seed (RFC 8410). */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
/** How long a replica signs with the key it knows before it looks for a rotation another made. */
const REFRESH_MS = 5_000;
/** Serialises the changes of `receipt_keys` between replicas (a start, a rotation). */
const KEYS_LOCK = sql`pg_advisory_xact_lock(hashtextextended('transactions:receipt_keys', 0))`;

interface SigningKey {
  generation: number;
  kid: string;
  x: string;
  privateKey: KeyObject;
}

/**
 * The exchange's receipt keys (D18.1, D18.4). Generation 0 is the Ed25519 key whose seed is
 * RECEIPT_SIGNING_KEY; generation n > 0 the one whose seed HKDF-SHA-256 derives from it for `n`. The
 * database keeps only their public parts (`receipt_keys`): every replica with the secret signs with
 * the newest generation, a rotation adds one and retires the one before, and retired keys stay in
 * the JWK set so that what they signed keeps verifying. A secret that is changed makes a new
 * generation at the next start (the stored key of the latest is not the one it derives).
 */
export class ReceiptKeyRing {
  private current!: SigningKey;
  private checkedAt = 0;
  private checking: Promise<void> | null = null;

  private constructor(private readonly db: Kysely<Database>, private readonly seed: Buffer, private readonly logger: Logger, private readonly did: string) {}

  static async start(db: Kysely<Database>, opts: { seed: string | undefined; publicBaseUrl: string; logger: Logger }): Promise<ReceiptKeyRing> {
    let seed: Buffer;
    if (opts.seed) {
      seed = Buffer.from(opts.seed, 'base64');
      if (seed.length !== 32) throw new Error('RECEIPT_SIGNING_KEY must be the base64 of 32 bytes');
    } else {
      seed = randomBytes(32);
      opts.logger.warn('RECEIPT_SIGNING_KEY is not set: receipts are signed with a key made for this process, which the next start replaces (its receipts keep verifying); set it to keep one key');
    }
    const ring = new ReceiptKeyRing(db, seed, opts.logger, exchangeDidOf(opts.publicBaseUrl));
    ring.current = await ring.adopt();
    ring.checkedAt = Date.now();
    return ring;
  }

  /** D18.2: the compact JWS of a receipt, signed by the current key. */
  async sign(claims: ReceiptClaims, now: Date): Promise<{ jws: string; kid: string }> {
    const key = this.signingKey();
    const payload: ReceiptPayload = { iss: this.did, sub: claims.transactionId, iat: Math.floor(now.getTime() / 1000), receipt: claims };
    const jws = await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
      .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: 'aex-receipt+jwt' })
      .sign(key.privateKey);
    return { jws, kid: key.kid };
  }

  /**
   * D21.1: A2A AgentCardSignatures of a card by the current key, one per canonical form given (see
   * `signAgentCard`) — JWSs whose payload is detached, as A2A v1.0 specifies. `typ` JOSE, not the
   * receipts' type: a card's signature never passes for a receipt.
   */
  async signCard(canonicalForms: string[], jku: string): Promise<{ signatures: Array<{ protected: string; signature: string }>; kid: string }> {
    const key = this.signingKey();
    const signatures = await Promise.all(canonicalForms.map(async (form) => {
      const jws = await new FlattenedSign(new TextEncoder().encode(form)).setProtectedHeader({ alg: 'EdDSA', typ: 'JOSE', kid: key.kid, jku }).sign(key.privateKey);
      return { protected: jws.protected!, signature: jws.signature };
    }));
    return { signatures, kid: key.kid };
  }

  /** What signs receipts with this ring, naming the agents by their did:web under `publicBaseUrl` (D6.6). */
  issuer(publicBaseUrl: string): ReceiptIssuer {
    return { sign: (claims, now) => this.sign(claims, now), agentDid: (agentId) => didWebFor(publicBaseUrl, agentId) };
  }

  /** D18.1: every key, the current one first. */
  async keys(): Promise<ReceiptKeysView> {
    const rows = await this.db.selectFrom('receiptKeys').selectAll().orderBy('generation', 'desc').execute();
    return keysView(rows);
  }

  /**
   * D18.4: in `trx`, a new generation that signs from its commit on; the one before is retired (and
   * keeps verifying). The keys as they then are.
   */
  async rotate(trx: Transaction<Database>, work: UnitOfWork, now: Date): Promise<ReceiptKeysView> {
    await sql`select ${KEYS_LOCK}`.execute(trx);
    const latest = await trx.selectFrom('receiptKeys').selectAll().orderBy('generation', 'desc').limit(1).executeTakeFirst();
    const key = await this.derive((latest?.generation ?? -1) + 1);
    await trx.updateTable('receiptKeys').set({ retiredAt: now }).where('retiredAt', 'is', null).execute();
    await trx.insertInto('receiptKeys').values({ generation: key.generation, kid: key.kid, x: key.x, createdAt: now, retiredAt: null }).execute();
    work.afterCommit(() => {
      this.current = key;
      this.checkedAt = Date.now();
      this.logger.info({ kid: key.kid, generation: key.generation }, 'receipt key rotated: new receipts are signed with the new key; the old one keeps verifying');
    });
    return keysView(await trx.selectFrom('receiptKeys').selectAll().orderBy('generation', 'desc').execute());
  }

  /**
   * The key to sign with: the one known; every few seconds a look for a newer one (another replica
   * may have rotated) starts beside it, and the signatures after it finds one use it. Never waited
   * for: a receipt is signed inside its purchase's database transaction, and a query on another of
   * the pool's connections, while every other connection waits for a lock that transaction holds
   * (a busy session's calls), would wait for ever.
   */
  private signingKey(): SigningKey {
    if (Date.now() - this.checkedAt > REFRESH_MS && !this.checking) {
      this.checking = this.lookForNewer().finally(() => {
        this.checking = null;
      });
    }
    return this.current;
  }

  private async lookForNewer(): Promise<void> {
    try {
      const latest = await this.db.selectFrom('receiptKeys').selectAll().where('retiredAt', 'is', null).orderBy('generation', 'desc').limit(1).executeTakeFirst();
      this.checkedAt = Date.now();
      if (!latest || latest.generation === this.current.generation) return;
      const key = await this.derive(latest.generation);
      if (key.kid === latest.kid) {
        this.current = key;
        return;
      }
      // Made by a replica with another secret: this one keeps signing with its own key, which is listed too.
      this.logger.warn({ kid: latest.kid, own: this.current.kid }, 'the newest receipt key was made with another RECEIPT_SIGNING_KEY; this replica signs with its own');
    } catch (err) {
      // The database is away: the key known still signs (receipts are written in that database anyway).
      this.logger.warn({ err }, 'could not look for a newer receipt key');
    }
  }

  /** At start: the newest generation when it is this secret's, else a new generation of this secret. */
  private adopt(): Promise<SigningKey> {
    return this.db.transaction().execute(async (trx) => {
      await sql`select ${KEYS_LOCK}`.execute(trx);
      const latest = await trx.selectFrom('receiptKeys').selectAll().orderBy('generation', 'desc').limit(1).executeTakeFirst();
      if (latest && latest.retiredAt === null) {
        const key = await this.derive(latest.generation);
        if (key.kid === latest.kid) return key;
      }
      const key = await this.derive((latest?.generation ?? -1) + 1);
      const now = new Date();
      await trx.updateTable('receiptKeys').set({ retiredAt: now }).where('retiredAt', 'is', null).execute();
      await trx.insertInto('receiptKeys').values({ generation: key.generation, kid: key.kid, x: key.x, createdAt: now, retiredAt: null }).execute();
      this.logger.info({ kid: key.kid, generation: key.generation }, 'receipt key made');
      return key;
    });
  }

  private async derive(generation: number): Promise<SigningKey> {
    const seed = generation === 0 ? this.seed : Buffer.from(hkdfSync('sha256', this.seed, Buffer.alloc(0), `aex receipt key ${generation}`, 32));
    const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
    const x = createPublicKey(privateKey).export({ format: 'jwk' }).x!;
    const kid = await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x });
    return { generation, kid, x, privateKey };
  }
}

const jwkOf = (row: Pick<ReceiptKeyRow, 'kid' | 'x'>): ReceiptJwk => ({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig', kid: row.kid, x: row.x });

function keysView(rows: ReceiptKeyRow[]): ReceiptKeysView {
  const current = rows.find((r) => r.retiredAt === null) ?? rows[0]!;
  const ordered = [current, ...rows.filter((r) => r !== current)];
  return {
    keys: ordered.map(jwkOf),
    current: current.kid,
    retired: rows.filter((r) => r.retiredAt !== null).map((r) => ({ kid: r.kid, retiredAt: r.retiredAt!.toISOString() })),
  };
}
