import type { Command } from 'commander';
import type { Context } from './context.js';
import { globalOptions } from './global-options.js';

/** Prints `data` as JSON with --json, else what `human` makes of it. */
export function show<T>(ctx: Context, cmd: Command, data: T, human: (d: T) => string): void {
  ctx.io.out(globalOptions(cmd).json ? `${JSON.stringify(data, null, 2)}\n` : human(data));
}
