// The package is a program (bin agent-exchange-mcp); what it exports runs it from code, and the
// spending guard it is built around.
export { main, runMain } from './main.js';
export { SpendingGuard } from './spending.js';
