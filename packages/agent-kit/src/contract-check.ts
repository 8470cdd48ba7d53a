import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * An Ajv for JSON Schema 2020-12 with formats, lenient about keywords it does not know (as MCP
 * clients are): what the tools check contracts and their own arguments with.
 */
export function schemaChecker(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  return ajv;
}

/** One way a value fails a contract's schema, with a JSON Pointer into what was checked. */
export interface ContractProblem {
  pointer: string;
  message: string;
}

export type ContractCheck = { ok: true } | { ok: false; problems: ContractProblem[] } | { ok: 'unchecked'; reason: string };

/**
 * Checks a value against a service's input or output schema before it is sent, so an agent hears
 * what is wrong from its own tool rather than after a round trip (the exchange checks again). The
 * schema is another agent's: nothing remote is ever fetched (Ajv resolves `$ref` only inside the
 * schema), and a schema this checker cannot compile is left to the exchange (`unchecked`).
 */
export function checkAgainstContract(schema: unknown, value: unknown, pointer: string): ContractCheck {
  if (typeof schema !== 'object' || schema === null) return { ok: 'unchecked', reason: 'the contract has no schema' };
  const ajv = schemaChecker();
  let validate;
  try {
    validate = ajv.compile(schema as object);
  } catch (err) {
    return { ok: 'unchecked', reason: `the schema could not be compiled here (${(err as Error).message})` };
  }
  if (validate(value)) return { ok: true };
  const problems = (validate.errors ?? []).slice(0, 20).map((e) => {
    const extra = e.keyword === 'required' ? `/${String((e.params as { missingProperty: string }).missingProperty)}` : e.keyword === 'additionalProperties' ? `/${String((e.params as { additionalProperty: string }).additionalProperty)}` : '';
    const message = e.keyword === 'required' ? 'is required' : e.keyword === 'additionalProperties' ? 'is not allowed by the schema' : (e.message ?? 'is not valid');
    return { pointer: `${pointer}${e.instancePath}${extra}`, message };
  });
  return { ok: false, problems };
}

/** The problems as one sentence per line: `"/input/text" is required`. */
export function describeProblems(problems: ContractProblem[]): string {
  return problems.map((p) => `"${p.pointer}" ${p.message}`).join('\n');
}
