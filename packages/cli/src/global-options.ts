import type { Command } from 'commander';

/** The options of `aex` itself, given before or after the command. */
export interface GlobalOptions {
  profile?: string;
  json?: boolean;
  url?: string;
  signatureScheme?: string;
}

export const globalOptions = (cmd: Command): GlobalOptions => cmd.optsWithGlobals() as GlobalOptions;
