import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `pnpm start`'s operator token when ADMIN_TOKEN is not set: made once, kept in the data directory
 * (`admin-token`, readable by its owner only), the same at every start, so the operator API and the
 * console's operator pages work out of the box on one machine. Never printed: the banner names the
 * file.
 */
export function localOperatorToken(dataDir: string): { token: string; file: string } {
  const file = join(dataDir, 'admin-token');
  if (existsSync(file)) {
    const token = readFileSync(file, 'utf8').trim();
    if (token.length >= 16) return { token, file };
  }
  mkdirSync(dataDir, { recursive: true });
  const token = randomBytes(24).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { token, file };
}
