import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, McpError, ReadResourceRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ExchangeClient } from '@agent-exchange/client';
import { explain, ok } from './tools/exchange-calls.js';

/** Services' contracts and the agent's transactions as resources: the recent transactions listed, any of either read by id. */
export function serveResources(server: Server, client: ExchangeClient): void {
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      { uriTemplate: 'aex://services/{serviceId}', name: 'service-contract', title: 'Service contract', description: 'A service\'s contract: schemas, pricing, SLA, examples', mimeType: 'application/json' },
      { uriTemplate: 'aex://transactions/{transactionId}', name: 'transaction', title: 'Transaction', description: 'One of this agent\'s transactions as it is now', mimeType: 'application/json' },
    ],
  }));

  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    const recent = await client.listTransactions({ limit: 20 });
    if (!recent.ok) throw new McpError(ErrorCode.InternalError, explain(recent.error));
    return {
      resources: recent.data.map((tx) => ({ uri: `aex://transactions/${tx.id}`, name: `transaction-${tx.id}`, title: `Transaction ${tx.id.slice(0, 8)} (${tx.status})`, mimeType: 'application/json' })),
    };
  });

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    const m = /^aex:\/\/(services|transactions)\/([0-9a-f-]{36})$/i.exec(uri);
    if (!m) throw new McpError(ErrorCode.InvalidParams, `Unknown resource ${uri}: aex://services/{id} and aex://transactions/{id} are served.`);
    try {
      const data = m[1] === 'services' ? ok(await client.getService(m[2]!)) : ok(await client.getTransaction(m[2]!));
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(data) }] };
    } catch (err) {
      throw new McpError(ErrorCode.InvalidParams, (err as Error).message);
    }
  });
}
