import { catalogOps, type ContractView } from '@aex/contracts';
import { agentTag, callOrThrow, serviceTag, type Bus, type LocalCache } from '@aex/platform';
import { ValidatorCache, validateAgainst, type SchemaSide, type ValidationOutcome } from '@aex/schemas';

/**
 * The contracts transactions are bound to (D7.6): a transaction keeps the revision it was
 * created with, read from the catalog (`catalog.getContract`). A revision never changes, so it is
 * cached for good (least recently used evicted); its validators are compiled once per revision.
 *
 * A service's *current* contract (its revision, status and provider's status) does change:
 * it is kept in `current` only while the catalog keeps that memory true — it tells every replica in
 * the registry to forget a service it changed, or a provider whose status it applied, and waits for
 * each before it answers (docs/gateway-caches.md). A read that raced such a change is not kept.
 */
export class PinnedContracts {
  private readonly revisions = new Map<string, ContractView>();
  private readonly validators = new ValidatorCache();

  constructor(
    private readonly bus: Bus,
    private readonly timeoutMs: number,
    private readonly currents: LocalCache<ContractView>,
    private readonly capacity = 2000,
  ) {}

  /** The service's current contract, with its current status and its provider's. */
  async current(serviceId: string, requestId: string): Promise<ContractView> {
    return this.currents.through(serviceId, async () => {
      const c = await callOrThrow(this.bus, catalogOps.getContract, { ctx: { requestId, principal: null }, input: { path: { serviceId }, query: {}, body: {} } }, this.timeoutMs);
      this.remember(c);
      return c;
    }, (c) => [serviceTag(serviceId), agentTag(c.agentId)]);
  }

  /** One revision of a contract. */
  async revision(serviceId: string, revision: number, requestId: string): Promise<ContractView> {
    const key = `${serviceId}@${revision}`;
    const hit = this.revisions.get(key);
    if (hit) {
      this.revisions.delete(key);
      this.revisions.set(key, hit);
      return hit;
    }
    const c = await callOrThrow(this.bus, catalogOps.getContract, { ctx: { requestId, principal: null }, input: { path: { serviceId }, query: { revision }, body: {} } }, this.timeoutMs);
    this.remember(c);
    return c;
  }

  /** Validates `value` against one side of a contract revision, under `pointer` (D9.2, D1.3). */
  check(contract: ContractView, side: SchemaSide, value: unknown, pointer: string): ValidationOutcome {
    const validate = this.validators.get({ serviceId: contract.serviceId, revision: contract.revision }, side, side === 'input' ? contract.inputSchema : contract.outputSchema);
    return validateAgainst(validate, value, pointer, side === 'input' ? 'SCHEMA_VALIDATION_FAILED' : 'OUTPUT_VALIDATION_FAILED');
  }

  get compiles(): number {
    return this.validators.stats.compiles;
  }

  private remember(c: ContractView): void {
    this.revisions.set(`${c.serviceId}@${c.revision}`, c);
    if (this.revisions.size > this.capacity) this.revisions.delete(this.revisions.keys().next().value as string);
  }
}
