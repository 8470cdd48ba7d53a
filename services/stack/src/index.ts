export { startStack, type Stack } from './service.js';
export { startEmbeddedPostgres, startLocalNats, type Started } from './infra/local-infra.js';
