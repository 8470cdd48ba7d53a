export { startIdentityService, type IdentityService } from './service.js';
export { database } from './db/migrations/index.js';
