export * from './config.js';
export * from './logger.js';
export * from './bus/index.js';
export * from './db/index.js';
export * from './messaging/index.js';
export * from './rpc.js';
export * from './runtime.js';
