export * from './types.js';
export { NatsBus, natsServers } from './nats-bus.js';
export { MemoryBus } from './memory-bus.js';
export { injectTrace, outsideTrace, withMessageSpan } from './tracing.js';
