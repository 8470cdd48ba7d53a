// The package is a program (bin aex); `run` runs it from code with its own output and environment.
export { run, VERSION } from './cli.js';
export { EXIT, type Io } from './output.js';
