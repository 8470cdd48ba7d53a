// The package is a program (bin aex); `run` runs it from code with its own output and environment.
export { VERSION } from './cli.js';
export { run } from './run.js';
export { EXIT } from './exit-codes.js';
export type { Io } from './io.js';
