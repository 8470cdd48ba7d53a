export * from './unit-of-work.js';
export * from './transaction-runner.js';
export * from './relay.js';
export * from './processed-messages.js';
export * from './consumer.js';
export * from './timers.js';
export * from './guarded-write.js';
