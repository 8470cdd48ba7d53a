export * from './connect.js';
export * from './platform-tables.js';
