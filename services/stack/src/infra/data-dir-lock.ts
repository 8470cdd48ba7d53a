import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, realpathSync, unlinkSync, writeSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { StartupError } from '@aex/platform';

export interface DataDirLock {
  release(): Promise<void>;
}

/** What the holder of a lock says about itself to a second start. */
interface Holder {
  pid: number;
  url: string | null;
}

/**
 * One exchange per data directory: a second `pnpm start` on the same `.data` must not stop the
 * first one's Postgres and nats-server (which it would otherwise take for leftovers of a killed
 * run). On Linux the lock is an abstract Unix socket named after the directory: the kernel holds
 * it exactly as long as the process lives and frees it when the process dies, even by SIGKILL, so
 * there is never a stale lock to judge. Elsewhere, a pid file created exclusively.
 */
export async function lockDataDir(dataDir: string, describe: () => Holder): Promise<DataDirLock> {
  mkdirSync(dataDir, { recursive: true });
  const dir = realpathSync(dataDir);
  return process.platform === 'linux' ? socketLock(dir, describe) : pidFileLock(dir);
}

function refusal(dir: string, holder: Holder | null): StartupError {
  const who = holder ? `pid ${holder.pid}${holder.url ? `, ${holder.url}` : ''}` : 'another process';
  return new StartupError(`Another exchange (${who}) is running on the data directory ${dir}. Stop it first, or give this one its own directory with AEX_DATA_DIR.`);
}

async function socketLock(dir: string, describe: () => Holder): Promise<DataDirLock> {
  const name = `\0agent-exchange-${createHash('sha256').update(dir).digest('hex').slice(0, 32)}`;
  const server: Server = createServer((socket) => socket.end(JSON.stringify(describe())));
  await new Promise<void>((resolve, reject) => {
    server.once('error', async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE') return reject(err);
      reject(refusal(dir, await askHolder(name)));
    });
    server.listen(name, () => resolve());
  });
  server.unref();
  return { release: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function askHolder(name: string): Promise<Holder | null> {
  return new Promise((resolve) => {
    let text = '';
    const socket = connect(name);
    const done = (holder: Holder | null) => {
      socket.destroy();
      resolve(holder);
    };
    socket.setTimeout(1000, () => done(null));
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('end', () => {
      try {
        done(JSON.parse(text) as Holder);
      } catch {
        done(null);
      }
    });
    socket.on('error', () => done(null));
  });
}

function pidFileLock(dir: string): DataDirLock {
  const file = join(dir, 'stack.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return { release: async () => unlinkSync(file) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
      if (alive(pid)) throw refusal(dir, { pid, url: null });
      unlinkSync(file);
    }
  }
  throw refusal(dir, null);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
