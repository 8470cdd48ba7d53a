export { startStack, type Stack } from './stack.js';
export { startEmbeddedPostgres, startLocalNats, type Started } from './local-infra.js';
