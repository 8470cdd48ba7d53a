import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createTestDatabaseFrom, TEST_ADMIN_DATABASE_URL, uniqueSuffix } from '../src/testing/index.js';

const query = async (url: string, text: string) => {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text)).rows;
  } finally {
    await c.end();
  }
};

describe('test databases cloned from a template', () => {
  it('builds the template once for files starting together, and gives each its own copy', async () => {
    const key = `kit_${uniqueSuffix()}`;
    let builds = 0;
    const template = {
      key,
      build: async (url: string) => {
        builds++;
        await query(url, 'create table made (n int); insert into made values (1)');
      },
    };
    const [a, b, c] = await Promise.all([createTestDatabaseFrom(template), createTestDatabaseFrom(template), createTestDatabaseFrom(template)]);
    try {
      expect(builds).toBe(1);
      expect(new Set([a!.name, b!.name, c!.name]).size).toBe(3);
      // Each copy is its own: a change to one is not seen by another.
      await query(a!.url, 'insert into made values (2)');
      expect(await query(a!.url, 'select n from made order by n')).toEqual([{ n: 1 }, { n: 2 }]);
      expect(await query(b!.url, 'select n from made order by n')).toEqual([{ n: 1 }]);
      // A later file clones without building again.
      const d = await createTestDatabaseFrom(template);
      expect(builds).toBe(1);
      await d.drop();
    } finally {
      await Promise.all([a, b, c].map((x) => x!.drop()));
      await query(TEST_ADMIN_DATABASE_URL, `drop database if exists aex_tmpl_${key}`);
    }
  });

  it('leaves no template behind when its build fails, so the next file builds it again', async () => {
    const key = `kit_${uniqueSuffix()}`;
    await expect(createTestDatabaseFrom({ key, build: async () => { throw new Error('migration failed'); } })).rejects.toThrow('migration failed');
    expect(await query(TEST_ADMIN_DATABASE_URL, `select datname from pg_database where datname = 'aex_tmpl_${key}'`)).toEqual([]);
  });
});
