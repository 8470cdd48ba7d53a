export * from './outbox.js';
export * from './consumer.js';
export * from './timers.js';
