import type { Command } from 'commander';
import { buildProgram } from './cli.js';
import { EXIT } from './exit-codes.js';
import { reportFailure } from './failure-report.js';
import { processIo, type Io } from './io.js';

/**
 * Runs `aex` with these arguments and answers its exit code: 0 done, 1 the exchange refused,
 * 2 a usage mistake, 3 the exchange unreachable, 4 `--wait` did not reach its status.
 */
export async function run(argv: string[], io: Io = processIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return runProgram(buildProgram(io, env), argv, io);
}

/** Runs a built program (one made by `buildProgram`, writing to `io`) and answers its exit code. */
export async function runProgram(program: Command, argv: string[], io: Io): Promise<number> {
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    return reportFailure(err, io, json);
  }
}
