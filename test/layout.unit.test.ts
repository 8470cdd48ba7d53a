import { readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The layout of every service (docs/architecture.md "Layout of a service"), and the lint rule that
// keeps imports inside it.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVICES = readdirSync(`${ROOT}services`).filter((s) => statSync(`${ROOT}services/${s}/src`, { throwIfNoEntry: false })?.isDirectory());
/** What may sit at a service's root: its wiring. */
const WIRING = ['context.ts', 'index.ts', 'main.ts', 'migrate.ts', 'service.ts'];

describe('the layout of a service', () => {
  it.each(SERVICES)('%s has nothing at its root but its wiring, and its code in folders', (service) => {
    const entries = readdirSync(`${ROOT}services/${service}/src`, { withFileTypes: true });
    expect(entries.filter((e) => e.isFile()).map((e) => e.name).filter((n) => !WIRING.includes(n))).toEqual([]);
    expect(entries.some((e) => e.isFile() && e.name === 'main.ts')).toBe(true);
  });

  it('names no folder after the repository\'s own folders or its packages', () => {
    for (const service of SERVICES) {
      const folders = readdirSync(`${ROOT}services/${service}/src`, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
      expect(folders, service).not.toContain('services');
      expect(folders, service).not.toContain(service);
    }
  });
});

describe('the lint rule that keeps imports inside the layout', () => {
  const eslint = new ESLint({ cwd: ROOT });
  const problems = async (path: string, code: string) => {
    const [result] = await eslint.lintText(code, { filePath: `${ROOT}${path}` });
    return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  };

  it('keeps domain/ pure: no database, no feature, only types from the schema', async () => {
    const found = await problems('services/transactions/src/domain/example.ts', [
      "import pg from 'pg';",
      "import { Kysely } from 'kysely';",
      "import { purchaseStep } from '../purchases/repository.js';",
      "import { HOLD_MOVES } from './purchase.js';",
      "import type { TransactionRow } from '../db/schema.js';",
      'export const x = [pg, Kysely, purchaseStep, HOLD_MOVES] as unknown as TransactionRow;',
    ].join('\n'));
    expect(found).toHaveLength(3);
    expect(found.join('\n')).toMatch(/'pg'[\s\S]*'Kysely'[\s\S]*purchases\/repository/);
  });

  it('keeps a feature out of its service\'s wiring and out of other services', async () => {
    const found = await problems('services/transactions/src/purchases/example.ts', [
      "import { startTransactionService } from '../service.js';",
      "import { decideHold } from '../../../wallet/src/domain/hold.js';",
      "import { decidePurchase } from '../domain/purchase.js';",
      'export const x = [startTransactionService, decideHold, decidePurchase];',
    ].join('\n'));
    expect(found).toHaveLength(2);
    expect(found.join('\n')).toMatch(/wiring[\s\S]*through its package/);
  });

  it('keeps db/ free of the service\'s features and wiring: its tables take only from db/ and domain/', async () => {
    const found = await problems('services/webhooks/src/db/migrations/example.ts', [
      "import type { AttemptResult } from '../schema.js';",
      "import { retryDelayMs } from '../../domain/schedule.js';",
      "import { sendOnce } from '../../deliveries/sender.js';",
      "import { startWebhookService } from '../../service.js';",
      'export const x = [retryDelayMs, sendOnce, startWebhookService] as unknown as AttemptResult;',
    ].join('\n'));
    expect(found).toHaveLength(2);
    expect(found.join('\n')).toMatch(/db\/ takes nothing/);
    expect(await problems('services/webhooks/src/db/schema.ts', "import type { X } from '../deliveries/sender.js';\nexport type Y = X;")).toHaveLength(1);
  });

  it('keeps a service\'s wiring inside its service', async () => {
    const found = await problems('services/wallet/src/service.ts', "import { x } from '../../identity/src/index.js';\nexport const y = x;");
    expect(found).toHaveLength(1);
  });
});
