import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A secret `pnpm start` makes once and keeps in the data directory (`name`, readable by its owner
 * only), the same at every start; one that is there but not `valid` is made again.
 */
function keptSecret(dataDir: string, name: string, make: () => string, valid: (s: string) => boolean): { value: string; file: string } {
  const file = join(dataDir, name);
  if (existsSync(file)) {
    const value = readFileSync(file, 'utf8').trim();
    if (valid(value)) return { value, file };
  }
  mkdirSync(dataDir, { recursive: true });
  const value = make();
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { value, file };
}

/**
 * `pnpm start`'s operator token when ADMIN_TOKEN is not set (`admin-token`), so the operator API and
 * the console's operator pages work out of the box on one machine. Never printed: the banner names
 * the file.
 */
export function localOperatorToken(dataDir: string): { token: string; file: string } {
  const { value, file } = keptSecret(dataDir, 'admin-token', () => randomBytes(24).toString('base64url'), (t) => t.length >= 16);
  return { token: value, file };
}

/**
 * D18.1: `pnpm start`'s receipt key when RECEIPT_SIGNING_KEY is not set (`receipt-signing-key`, the
 * base64 of a 32-byte seed): kept, so the receipts of one start verify with the same key after the next.
 */
export function localReceiptKey(dataDir: string): string {
  return keptSecret(dataDir, 'receipt-signing-key', () => randomBytes(32).toString('base64'), (k) => Buffer.from(k, 'base64').length === 32 && /^[A-Za-z0-9+/]{43}=$/.test(k)).value;
}
