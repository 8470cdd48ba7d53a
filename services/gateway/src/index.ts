export { buildGateway, type GatewayOptions } from './app.js';
export { routes } from './http/routes.js';
