import type { ValidateFunction } from 'ajv/dist/2020.js';
import { toEntries, type ErrorCode, type ErrorEntry } from '@aex/contracts';
import { compileContractSchema } from './contract-schema.js';

/** Which contract a validator belongs to: a service and one revision of its contract (D7.2, D7.6). */
export interface ContractKey {
  serviceId: string;
  /** Bumped by the catalog on every change of schemas, pricing, SLA or version. */
  revision: number;
}

export type SchemaSide = 'input' | 'output';

export type ValidationOutcome = { ok: true } | { ok: false; errors: ErrorEntry[] };

/**
 * Compiled input/output validators by service id and contract revision, least recently used evicted
 * (compiling a medium schema takes ~18 ms; validating takes microseconds). The key includes the
 * revision, not only the semver `version`: a provider may change a schema without bumping it, and
 * a transaction keeps validating against the revision it was created with.
 */
export class ValidatorCache {
  private readonly entries = new Map<string, ValidateFunction>();
  private compiles = 0;

  constructor(private readonly capacity = 4000) {}

  /** The compiled validator of one side of a contract revision, compiled on first use. */
  get(key: ContractKey, side: SchemaSide, schema: object): ValidateFunction {
    const id = `${key.serviceId}@${key.revision}/${side}`;
    const hit = this.entries.get(id);
    if (hit) {
      // Re-insert: Map iteration order is insertion order, so the first key is the least recent.
      this.entries.delete(id);
      this.entries.set(id, hit);
      return hit;
    }
    const compiled = compileContractSchema(schema);
    this.compiles += 1;
    this.entries.set(id, compiled);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
    return compiled;
  }

  get stats(): { size: number; compiles: number } {
    return { size: this.entries.size, compiles: this.compiles };
  }
}

/** Runs a compiled validator and turns its failures into D1.3 entries under `pointer` (e.g. `/input`). */
export function validateAgainst(validate: ValidateFunction, value: unknown, pointer: string, code: ErrorCode): ValidationOutcome {
  if (validate(value)) return { ok: true };
  return { ok: false, errors: toEntries(validate.errors ?? [], pointer, code) };
}
