export * from './connect.js';
export * from './platform-tables.js';
export * from './group-commit.js';
export * from './errors.js';
export * from './precompiled.js';
