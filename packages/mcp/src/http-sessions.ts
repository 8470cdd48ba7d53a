import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

/** How long a session may go without a request before it is closed, unless the host says otherwise. */
export const DEFAULT_SESSION_IDLE_MS = 30 * 60_000;

/**
 * The open HTTP sessions, each with the time of its last request. A sweeper closes those idle for
 * `idleMs`, since a client may vanish without ending its session (and `onIdleClose` hears of each).
 */
export class HttpSessions {
  private readonly transports = new Map<string, StreamableHTTPServerTransport>();
  private readonly lastSeen = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly idleMs: number, private readonly onIdleClose?: (sessionId: string) => void) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, Math.max(250, idleMs / 4)));
    this.sweeper.unref();
  }

  /** The session's transport; undefined for a session unknown or ended. */
  find(sessionId: string): StreamableHTTPServerTransport | undefined {
    return this.transports.get(sessionId);
  }

  /** Records a request of the session: its idle time starts again. */
  touch(sessionId: string): void {
    this.lastSeen.set(sessionId, Date.now());
  }

  add(sessionId: string, transport: StreamableHTTPServerTransport): void {
    this.transports.set(sessionId, transport);
    this.lastSeen.set(sessionId, Date.now());
  }

  /** Forgets a session its transport closed. */
  remove(sessionId: string): void {
    this.transports.delete(sessionId);
    this.lastSeen.delete(sessionId);
  }

  async closeAll(): Promise<void> {
    clearInterval(this.sweeper);
    for (const t of this.transports.values()) await t.close();
  }

  private sweep(): void {
    const now = Date.now();
    for (const [id, at] of this.lastSeen) {
      if (now - at < this.idleMs) continue;
      this.lastSeen.delete(id);
      void this.transports.get(id)?.close();
      this.transports.delete(id);
      this.onIdleClose?.(id);
    }
  }
}
