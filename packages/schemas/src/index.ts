export { checkContractSchema, checkedValidator, compileContractSchema, DRAFT_2020_12, SCHEMA_LIMITS, type SchemaProblem } from './contract-schema.js';
export { ValidatorCache, validateAgainst, type ContractKey, type SchemaSide, type ValidationOutcome } from './validator-cache.js';
