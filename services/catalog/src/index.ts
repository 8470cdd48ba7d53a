export { startCatalogService, type CatalogService } from './service.js';
