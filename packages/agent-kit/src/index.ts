export { checkAgainstContract, describeProblems, schemaChecker, type ContractCheck, type ContractProblem } from './contract-check.js';
export { clientOf, profilePath, readProfiles, requireAgentProfile, resolveProfile, saveProfile, signatureSchemeOf, updateProfile, writeProfiles, UsageError, type Profile, type ProfileFile } from './profiles.js';
export { AWAITING_DELIVERY, waitForStatus, type WaitOptions, type WaitOutcome } from './waiting.js';
