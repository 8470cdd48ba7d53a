export { buildGateway, type GatewayOptions } from './app.js';
export { routes } from './http/routes.js';
export { listen } from './server.js';
export { openApiDocument } from './http/openapi.js';
