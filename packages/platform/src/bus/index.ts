export * from './types.js';
export { NatsBus } from './nats-bus.js';
export { natsServers } from './nats-servers.js';
export { MemoryBus } from './memory-bus.js';
export { injectTrace, outsideTrace, withMessageSpan } from './tracing.js';
export { StoreUnreachableError, within, withinBudget } from './kv-deadlines.js';
