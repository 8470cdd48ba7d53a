/** Where the CLI writes: the process's streams, or a test's buffers. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Whether standard output is a terminal (a live status line then; plain lines otherwise). */
  isTTY: boolean;
}

export const processIo: Io = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
  isTTY: Boolean(process.stdout.isTTY),
};
