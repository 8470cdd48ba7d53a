import type { Kysely } from 'kysely';
import { RecentMap } from '@aex/platform';
import type { Database } from '../db/schema.js';

/**
 * Which wallet belongs to whom: it never changes once a wallet exists (one per agent, one platform
 * wallet, none ever deleted), so the saga looks each up once per running service.
 */
export class WalletDirectory {
  private readonly known = new RecentMap<string, string>(100_000);

  /** The agent's wallet, undefined when it has none (not remembered: it may open later). */
  async find(db: Kysely<Database>, agentId: string): Promise<string | undefined> {
    const cached = this.known.get(agentId);
    if (cached) return cached;
    const row = await db.selectFrom('wallets').select('id').where('agentId', '=', agentId).executeTakeFirst();
    if (row) this.known.set(agentId, row.id);
    return row?.id;
  }

  async ofAgent(db: Kysely<Database>, agentId: string): Promise<string> {
    const id = await this.find(db, agentId);
    if (!id) throw new Error(`agent ${agentId} has no wallet`);
    return id;
  }

  /** The platform revenue wallet (D13.3). */
  async platform(db: Kysely<Database>): Promise<string> {
    const cached = this.known.get('platform');
    if (cached) return cached;
    const row = await db.selectFrom('wallets').select('id').where('kind', '=', 'platform').executeTakeFirstOrThrow();
    this.known.set('platform', row.id);
    return row.id;
  }
}
