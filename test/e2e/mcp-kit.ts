import { expect } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { TestExchange } from './harness.js';

// How the MCP tests drive the installed server: its bin over stdio with the SDK's client, and the
// tools called as a scripted agent calls them.

interface Setup {
  ex: TestExchange;
  /** The installed bin, and the HOME it runs with. */
  bin: string;
  dir: string;
  /** Every client started, for the file to close. */
  clients: Client[];
}

export function mcpKit(setup: () => Setup) {
  /** Starts the installed bin over stdio as `agent`, with the SDK's client; `elicit` answers the human's question when given. */
  async function session(agent: { id: string; apiKey: string; secretKey?: string }, args: string[], opts: { elicit?: (message: string) => 'accept' | 'decline'; env?: Record<string, string> } = {}): Promise<Client> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [setup().bin, ...args],
      env: { PATH: process.env.PATH ?? '', HOME: setup().dir, AEX_URL: setup().ex.url, AEX_AGENT_ID: agent.id, AEX_API_KEY: agent.apiKey, ...(agent.secretKey ? { AEX_SIGNING_KEY: agent.secretKey } : {}), AEX_MCP_POLL_MS: '100', ...opts.env },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'scripted-agent', version: '1.0.0' }, { capabilities: opts.elicit ? { elicitation: {} } : {} });
    if (opts.elicit) {
      const answer = opts.elicit;
      client.setRequestHandler(ElicitRequestSchema, async (req) => (answer(req.params.message) === 'accept' ? { action: 'accept', content: { allow: true } } : { action: 'decline' }));
    }
    await client.connect(transport);
    setup().clients.push(client);
    return client;
  }

  async function call(client: Client, name: string, args: Record<string, unknown>, progress?: string[]): Promise<CallToolResult> {
    return (await client.callTool({ name, arguments: args }, undefined, progress ? { onprogress: (p) => void progress.push(p.message ?? '') } : undefined)) as CallToolResult;
  }
  /** The structured result of a call that must succeed. */
  async function data<T = Record<string, unknown>>(client: Client, name: string, args: Record<string, unknown>, progress?: string[]): Promise<T> {
    const r = await call(client, name, args, progress);
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    return r.structuredContent as T;
  }
  /** The text of a call that must be refused as a tool error. */
  async function refusal(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
    const r = await call(client, name, args);
    expect(r.isError).toBe(true);
    return (r.content[0] as { text: string }).text;
  }
  return { session, call, data, refusal };
}
