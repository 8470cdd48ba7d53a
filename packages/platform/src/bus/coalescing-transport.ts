import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import type { ConnectionOptions, NatsConnection } from '@nats-io/nats-core';
import type { NatsConnectionImpl, setTransportFactory, Transport } from '@nats-io/nats-core/internal';

// transport-node's Node socket transport and its host resolver are not in its typings' entry point;
// its `connect` (which installs exactly these) cannot take a transport of ours. Required, not
// imported: the OpenTelemetry loader hook (import-in-the-middle) wraps every ESM import of these
// CommonJS packages, and a second ESM entry into nats-core beside transport-node's made it lose
// transport-node's named exports now and then (the kubernetes test's boot with telemetry on).
const require = createRequire(import.meta.url);
const { NodeTransport, nodeResolveHost } = require('@nats-io/transport-node/lib/node_transport.js') as {
  NodeTransport: new () => Transport & { socket?: Socket };
  nodeResolveHost: (s: string) => Promise<string[]>;
};
const core = require('@nats-io/transport-node/lib/nats-base-client.js') as {
  NatsConnectionImpl: typeof NatsConnectionImpl;
  setTransportFactory: typeof setTransportFactory;
};

/**
 * transport-node's socket transport whose writes wait for the end of the event loop's turn
 * (docs/performance.md). nats.js writes what it has gathered in one
 * microtask; every callback of an I/O event (an answer from Postgres, a message from NATS) ends its
 * own microtasks, so a busy process wrote once per message it sent — a lifecycle made 28 socket
 * writes to NATS, each a system call that wakes the server. Corked until `setImmediate`, everything
 * the callbacks of one turn send leaves in one write. A message waits at most for the rest of that
 * turn's callbacks, never for a timer.
 */
class CoalescingTransport extends NodeTransport {
  #corked: Socket | undefined;

  override send(frame: Uint8Array): void {
    const socket = this.socket;
    if (socket && this.#corked !== socket && !socket.destroyed) {
      this.#corked = socket;
      socket.cork();
      setImmediate(() => {
        this.#corked = undefined;
        socket.uncork();
      });
    }
    super.send(frame);
  }
}

/** `connect` of transport-node, with the coalescing transport. */
export function connectCoalescing(opts: ConnectionOptions): Promise<NatsConnection> {
  // The factory is a module-level setting of nats-core, read when a connection (or reconnection)
  // makes its transport; every connection of this process is made here, so it is always this one.
  core.setTransportFactory({ factory: () => new CoalescingTransport(), dnsResolveFn: nodeResolveHost });
  return core.NatsConnectionImpl.connect(opts);
}
