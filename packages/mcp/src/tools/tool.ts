import type { Static, TSchema } from '@sinclair/typebox';
import type { ExchangeClient } from '@agent-exchange/client';
import type { Profile } from '@aex/agent-kit';
import type { SpendingGuard } from '../spending.js';

/** What a tool works with: the agent it acts as, the human's limits, and its way to talk back. */
export interface ToolContext {
  client: ExchangeClient;
  profile: Profile;
  guard: SpendingGuard;
  /** Longest a tool waits for the exchange (funds held, a delivery), unless the call asks for less. */
  maxWaitMs: number;
  pollMs: number;
  /** Reports progress to the client when it asked for it (a progress token); otherwise nothing. */
  progress(message: string): Promise<void>;
  /** Asks the human through the client (MCP elicitation); `unsupported` when the client cannot. */
  askHuman(message: string): Promise<'accepted' | 'declined' | 'unsupported'>;
  signal: AbortSignal;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface Tool<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  /** Listed only when the human set a budget (or, with `alsoForProviders`, when started as a provider). */
  spending?: boolean;
  /** A spending tool a provider needs without spending (negotiate: a provider's counter-offers). */
  alsoForProviders?: boolean;
  /** Listed only when the server was started as a provider. */
  provider?: boolean;
  run(args: Static<I>, ctx: ToolContext): Promise<Static<O>>;
}

/** A refusal the model should read: the result is marked as an error and carries this text. */
export class ToolFailure extends Error {
  override readonly name = 'ToolFailure';
}

/** Types a tool's `run` by its own schemas, then lists it among tools of any schema. */
export const tool = <I extends TSchema, O extends TSchema>(t: Tool<I, O>): Tool => t as unknown as Tool;

export const READ: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true };
export const WRITE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true };
export const IRREVERSIBLE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };
