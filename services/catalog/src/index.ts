export { startCatalogService, type CatalogService } from './service.js';
export { database } from './db/migrations/index.js';
