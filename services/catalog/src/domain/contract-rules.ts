import { AppError, type ErrorEntry, type Pricing, type ServiceExample, type Sla } from '@aex/contracts';
import { checkContractSchema, checkedValidator, validateAgainst } from '@aex/schemas';

/** The parts of a contract the D7 rules look at together. */
export interface ContractParts {
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
  pricing: Pricing;
  sla: Sla;
  examples: ServiceExample[];
}

/**
 * Every cross-field rule of D7.2–D7.4 on a complete contract (field bounds are the request schema's):
 * both schemas valid 2020-12 and self-contained (400 INVALID_SCHEMA, one entry per violation), then
 * pricing and SLA consistency and examples that pass the schemas (400 VALIDATION_ERROR).
 * `changed` names the body fields the request set, so errors point at what the caller sent.
 */
export function assertContract(c: ContractParts, changed: ReadonlySet<string>): void {
  const schemaErrors: ErrorEntry[] = [];
  for (const key of ['inputSchema', 'outputSchema'] as const) {
    for (const p of checkContractSchema(c[key])) {
      schemaErrors.push({ code: 'INVALID_SCHEMA', message: `${key}: ${p.message}`, field: `/body/${key}${p.path}` });
    }
  }
  if (schemaErrors.length) throw AppError.many(schemaErrors);

  const errors: ErrorEntry[] = [...pricingProblems(c.pricing), ...slaProblems(c.sla)];
  if (c.examples.length) {
    const input = checkedValidator(c.inputSchema);
    const output = checkedValidator(c.outputSchema);
    // When only a schema changed, the stored examples are what fails: say so on the schema's field.
    const examplesSent = changed.has('examples');
    c.examples.forEach((ex, i) => {
      for (const [part, validate] of [['input', input], ['output', output]] as const) {
        const r = validateAgainst(validate, ex[part], `/body/examples/${i}/${part}`, 'VALIDATION_ERROR');
        if (r.ok) continue;
        if (examplesSent) errors.push(...r.errors);
        else errors.push({ code: 'VALIDATION_ERROR', message: `Stored example ${i} no longer passes the new ${part}Schema; send updated examples with it.`, field: `/body/${part}Schema`, details: { example: i, violations: r.errors.slice(0, 5) } });
      }
    });
  }
  if (errors.length) throw AppError.many(errors);
}

/** D7.3: `minimumCents ≤ basePriceCents ≤ maximumCents` where given. */
export function pricingProblems(p: Pricing): ErrorEntry[] {
  const out: ErrorEntry[] = [];
  if (p.minimumCents !== undefined && p.minimumCents > p.basePriceCents) {
    out.push({ code: 'VALIDATION_ERROR', message: 'pricing.minimumCents may not exceed basePriceCents.', field: '/body/pricing/minimumCents' });
  }
  if (p.maximumCents !== undefined && p.maximumCents < p.basePriceCents) {
    out.push({ code: 'VALIDATION_ERROR', message: 'pricing.maximumCents may not be below basePriceCents.', field: '/body/pricing/maximumCents' });
  }
  if (p.model !== 'negotiable' && (p.minimumCents !== undefined || p.maximumCents !== undefined)) {
    out.push({ code: 'VALIDATION_ERROR', message: 'pricing.minimumCents and maximumCents apply to the negotiable model only.', field: `/body/pricing/${p.minimumCents !== undefined ? 'minimumCents' : 'maximumCents'}` });
  }
  out.push(...tierProblems(p));
  return out;
}

/** D9.3 (EXT): tiers belong to the tiered model, ascend strictly, and the last one is open (`null`). */
function tierProblems(p: Pricing): ErrorEntry[] {
  if (!p.tiers) return [];
  const at = (i: number) => `/body/pricing/tiers/${i}/upToUnits`;
  if (p.model !== 'tiered') return [{ code: 'VALIDATION_ERROR', message: 'pricing.tiers apply to the tiered model only.', field: '/body/pricing/tiers' }];
  const last = p.tiers.length - 1;
  for (let i = 0; i < p.tiers.length; i++) {
    const up = p.tiers[i]!.upToUnits;
    if (i === last && up !== null) return [{ code: 'VALIDATION_ERROR', message: 'The last pricing tier must be open: upToUnits null.', field: at(i) }];
    if (i < last && up === null) return [{ code: 'VALIDATION_ERROR', message: 'Only the last pricing tier may be open (upToUnits null).', field: at(i) }];
    const previous = i > 0 ? p.tiers[i - 1]!.upToUnits : 0;
    if (up !== null && previous !== null && up <= previous) return [{ code: 'VALIDATION_ERROR', message: 'pricing.tiers must ascend strictly by upToUnits.', field: at(i) }];
  }
  return [];
}

/** D7.3: `timeoutMs ≥ maxLatencyMs`. */
export function slaProblems(s: Sla): ErrorEntry[] {
  return s.timeoutMs < s.maxLatencyMs
    ? [{ code: 'VALIDATION_ERROR', message: 'sla.timeoutMs must be at least sla.maxLatencyMs.', field: '/body/sla/timeoutMs' }]
    : [];
}

/** Defaults of the spec: currency USD, maxRetries 2. */
export function withDefaults(pricing: Pricing, sla: Sla): { pricing: Pricing; sla: Sla } {
  return { pricing: { ...pricing, currency: pricing.currency ?? 'USD' }, sla: { ...sla, maxRetries: sla.maxRetries ?? 2 } };
}

/** What a budget must cover to afford the service (D8.4): the negotiable minimum, else the base price. */
export function budgetFloor(p: Pricing): number {
  return p.model === 'negotiable' && p.minimumCents !== undefined ? p.minimumCents : p.basePriceCents;
}
