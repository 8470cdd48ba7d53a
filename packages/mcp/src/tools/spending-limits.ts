import { ToolFailure, type ToolContext } from './tool.js';

/**
 * Commits the server to paying `cents` for `ref` within the human's limits: over the per-call cap
 * the human is asked (where the client can ask), over the budget nobody can allow it.
 */
export async function withinLimits(ctx: ToolContext, ref: string, cents: number, what: string): Promise<void> {
  const { verdict } = ctx.guard.check(ref, cents);
  const { budgetCents, spentCents, maxPerCallCents } = ctx.guard.state;
  if (verdict === 'over_budget') {
    throw new ToolFailure(
      `Refused: ${what} costs ${cents} cents, and this session's budget has ${budgetCents - spentCents} of ${budgetCents} cents left. ` +
        'The budget was set by the human who started this server (AEX_MCP_BUDGET_CENTS or --budget-cents) and no tool can raise it; ask them to restart it with a larger budget.',
    );
  }
  if (verdict === 'over_cap') {
    const answer = await ctx.askHuman(`Your agent wants to spend ${cents} cents on ${what}, above the per-call cap of ${maxPerCallCents} cents you set. Allow this one purchase?`);
    if (answer === 'accepted') return;
    if (answer === 'declined') throw new ToolFailure(`Refused: the human declined ${what} (${cents} cents, above the per-call cap of ${maxPerCallCents} cents).`);
    throw new ToolFailure(
      `Refused: ${what} costs ${cents} cents, above the per-call cap of ${maxPerCallCents} cents set by the human who started this server (AEX_MCP_MAX_PER_CALL_CENTS or --max-per-call-cents). ` +
        'This client cannot ask the human (no MCP elicitation); they can allow it by restarting the server with a higher cap, or by using a client that supports elicitation.',
    );
  }
}
