import { CliError, EXIT } from './exit-codes.js';
import type { Io } from './io.js';

/** Reads a secret at a terminal without echoing it; null when there is no terminal. */
export async function askHidden(io: Io, prompt: string): Promise<string | null> {
  if (!process.stdin.isTTY) return null;
  io.err(prompt);
  process.stdin.setRawMode(true);
  process.stdin.resume();
  let value = '';
  try {
    for await (const chunk of process.stdin) {
      for (const ch of (chunk as Buffer).toString('utf8')) {
        if (ch === '\r' || ch === '\n') return value;
        if (ch === '\u0003') throw new CliError('Cancelled.', EXIT.usage);
        if (ch === '\u007f') value = value.slice(0, -1);
        else value += ch;
      }
    }
    return value;
  } finally {
    process.stdin.setRawMode(false);
    process.stdin.pause();
    io.err('\n');
  }
}
