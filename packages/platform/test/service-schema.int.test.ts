import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { connectServiceDb } from '../src/index.js';
import { messagingTest, migrations, SCHEMA, type Db } from './messaging-kit.js';

// Each service in its own schema, as its own role (docs/architecture.md "Layout of a service"), on real Postgres.

const t = messagingTest({ bus: false });

describe('per-service schema and role', () => {
  it('runs every pooled connection as the role aex_<schema>, with the schema as its search path', async () => {
    const { rows: [who] } = await sql<{ role: string; path: string }>`select current_user as role, current_setting('search_path') as path`.execute(t.db);
    expect(who).toEqual({ role: `aex_${SCHEMA}`, path: SCHEMA });
    expect(t.service.role).toBe(`aex_${SCHEMA}`);
  });

  it('runs as its own role that cannot read another service’s schema', async () => {
    const other = await connectServiceDb<Db>({ url: t.database.url, schema: 'othersvc', migrations });
    try {
      await expect(sql`select count(*) from ${sql.table(`${SCHEMA}.effects`)}`.execute(other.db)).rejects.toThrow(/permission denied/);
      expect(other.role).toBe('aex_othersvc');
    } finally {
      await other.close();
    }
  });

  it('runs migrations once: connecting again applies nothing new', async () => {
    const again = await connectServiceDb<Db>({ url: t.database.url, schema: SCHEMA, migrations });
    try {
      const rows = await sql<{ name: string }>`select name from ${sql.table(`${SCHEMA}.kysely_migration`)}`.execute(again.db);
      expect(rows.rows.map((r) => r.name)).toEqual(['0001']);
    } finally {
      await again.close();
    }
  });
});
