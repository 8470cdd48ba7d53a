import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ExchangeClient } from '@agent-exchange/client';
import type { Profile } from '@aex/agent-kit';
import { serveResources } from './resources.js';
import type { SpendingGuard } from './spending.js';
import { serveTools } from './tool-calls.js';
import { TOOLS } from './tools/catalog.js';
import type { Tool } from './tools/tool.js';

export const SERVER_NAME = 'agent-exchange';
export const SERVER_VERSION = '0.1.0';

/** What one server process holds for every session it serves. */
export interface ExchangeMcpOptions {
  client: ExchangeClient;
  profile: Profile;
  guard: SpendingGuard;
  /** Provider tools are listed only when true. */
  provider: boolean;
  maxWaitMs: number;
  pollMs: number;
}

/**
 * The tools this server lists: spending ones only with a budget (a provider also gets negotiate, for
 * its counter-offers; what a consumer would commit through it still needs the budget), provider ones
 * only as a provider.
 */
export function toolsOf(opts: Pick<ExchangeMcpOptions, 'guard' | 'provider'>): Tool[] {
  return TOOLS.filter((t) => (!t.spending || opts.guard.enabled || (t.alsoForProviders && opts.provider)) && (!t.provider || opts.provider));
}

const INSTRUCTIONS = [
  'Tools of an Agent Exchange, acting as one agent: find services (search_services), read their contracts (get_service), buy them with the price held in escrow (buy_service),',
  'wait for the provider\'s delivery (wait_for_delivery), then pay by accepting it (accept_delivery) or open_dispute. Prices are integer cents (USD).',
  'Spending is limited by a per-call cap and a session budget the human set when starting this server; no tool can raise them.',
].join(' ');

/**
 * One MCP server (one per session over HTTP, one per process over stdio) on the official SDK's
 * low-level `Server`: the tools' JSON Schemas are the exchange's own contract schemas, given as they
 * are rather than rewritten in Zod, and every call's arguments are checked against them first.
 */
export function createExchangeMcpServer(opts: ExchangeMcpOptions): Server {
  const server = new Server(
    { name: SERVER_NAME, title: 'Agent Exchange', version: SERVER_VERSION },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );
  serveTools(server, toolsOf(opts), opts);
  serveResources(server, opts.client);
  return server;
}
