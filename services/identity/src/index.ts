export { startIdentityService, type IdentityService } from './service.js';
