export { buildGateway, type GatewayOptions } from './service.js';
export { routes } from './http/routes.js';
export { listen } from './http/server.js';
export { openApiDocument } from './http/openapi.js';
