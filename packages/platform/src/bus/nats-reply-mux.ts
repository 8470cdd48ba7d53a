import { createInbox, type Msg, type NatsConnection, type MsgHdrs } from '@nats-io/transport-node';
import { NO_RESPONDERS } from './types.js';

/**
 * Request and reply over one subscription of the connection's own: nats.js builds an
 * `Error`, with its stack, for every request it completes (`RequestOne.cancel`) — for RPCs and for
 * every JetStream publish, 2–3 % of the exchange's CPU. Replies come to `<inbox>.<token>`; a
 * no-responders status (503) or the time running out ends the request with an error.
 */
export class ReplyMux {
  private readonly inbox = createInbox();
  private readonly pending = new Map<string, { resolve(m: Msg): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  private next = 0;

  constructor(private readonly nc: NatsConnection) {
    nc.subscribe(`${this.inbox}.*`, {
      callback: (err, msg) => {
        if (err) return;
        const token = msg.subject.slice(this.inbox.length + 1);
        const waiting = this.pending.get(token);
        if (!waiting) return;
        this.pending.delete(token);
        clearTimeout(waiting.timer);
        if (msg.headers?.hasError && msg.headers.code === 503) waiting.reject(new Error(NO_RESPONDERS));
        else waiting.resolve(msg);
      },
    });
  }

  request(subject: string, payload: Uint8Array, timeoutMs: number, headers: MsgHdrs | undefined): Promise<Msg> {
    const token = (this.next++).toString(36);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(token);
        reject(new Error('timeout'));
      }, timeoutMs);
      this.pending.set(token, { resolve, reject, timer });
      try {
        this.nc.publish(subject, payload, { reply: `${this.inbox}.${token}`, headers });
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(token);
        reject(err as Error);
      }
    });
  }
}
