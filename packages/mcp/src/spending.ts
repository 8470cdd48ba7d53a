/**
 * What the human who started the server allows its model to spend: a cap per call and a budget for
 * the server's whole run (every MCP session it serves shares it, so opening a new session never
 * resets it). Nothing a tool receives can change either. Amounts are committed per transaction — the
 * most this server has agreed to pay for it (an opening offer, a counter-offer, a price) — so a price
 * raised during a negotiation is counted once, at its highest.
 */
export class SpendingGuard {
  private spent = 0;
  private readonly committed = new Map<string, number>();
  /** A purchase key → the transaction it created: a retried purchase finds what it committed. */
  private readonly aliases = new Map<string, string>();
  private readonly resolve = (ref: string) => this.aliases.get(ref) ?? ref;

  constructor(readonly limits: { budgetCents: number; maxPerCallCents: number }) {}

  /** Whether spending tools exist at all: only when the human set a budget. */
  get enabled(): boolean {
    return this.limits.budgetCents > 0;
  }

  get state(): { budgetCents: number; spentCents: number; remainingCents: number; maxPerCallCents: number } {
    return { budgetCents: this.limits.budgetCents, spentCents: this.spent, remainingCents: this.limits.budgetCents - this.spent, maxPerCallCents: this.limits.maxPerCallCents };
  }

  /**
   * What committing to pay `cents` for `ref` (a transaction or a purchase key) would do: `ok` with
   * the extra amount it adds to what is spent, `over_cap` (a human may allow it), or `over_budget`
   * (nobody can, within this run).
   */
  check(ref: string, cents: number): { verdict: 'ok' | 'over_cap' | 'over_budget'; extra: number } {
    const extra = Math.max(0, cents - (this.committed.get(this.resolve(ref)) ?? 0));
    // What is already committed is no new spending, whatever the limits say now.
    if (extra === 0) return { verdict: 'ok', extra };
    if (this.spent + extra > this.limits.budgetCents) return { verdict: 'over_budget', extra };
    if (cents > this.limits.maxPerCallCents) return { verdict: 'over_cap', extra };
    return { verdict: 'ok', extra };
  }

  /** Records the commitment (after `check`, once the exchange took it). */
  commit(ref: string, cents: number): void {
    ref = this.resolve(ref);
    const before = this.committed.get(ref) ?? 0;
    if (cents <= before) return;
    this.committed.set(ref, cents);
    this.spent += cents - before;
  }

  /** Moves what was committed under a purchase key to the transaction it created; the key then names it. */
  rename(from: string, to: string): void {
    if (from === to) return;
    const cents = this.committed.get(from);
    this.aliases.set(from, to);
    if (cents === undefined) return;
    this.committed.delete(from);
    this.committed.set(to, Math.max(cents, this.committed.get(to) ?? 0));
  }

  /** What was committed for `ref` (a transaction, or the purchase key that created it), if anything. */
  committedFor(ref: string): number | undefined {
    return this.committed.get(this.resolve(ref));
  }
}
