import { readFileSync } from 'node:fs';
import { CliError, EXIT } from './exit-codes.js';

/** Reads a JSON file (`-` for standard input) as an object, or says plainly why not. */
export function readJson(path: string, what: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (err) {
    throw new CliError(`Cannot read the ${what} file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}.`, EXIT.usage);
  }
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    return value as Record<string, unknown>;
  } catch (err) {
    throw new CliError(`The ${what} file ${path} is not a JSON object (${(err as Error).message}).`, EXIT.usage);
  }
}
