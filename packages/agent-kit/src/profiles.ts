import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { ExchangeClient } from '@agent-exchange/client';

/** One agent's credentials on one exchange, as `aex login` / `aex signup` keep them. */
export interface Profile {
  /** The gateway's URL. */
  url: string;
  agentId: string;
  accountId?: string;
  apiKey: string;
  /** Base64 Ed25519 secret key: every request is signed with it once registered. */
  signingSecretKey?: string;
  /** How requests are signed: `x-ae` (default, the X-AE-Signature headers) or `rfc9421` (RFC 9421 HTTP Message Signatures). */
  signatureScheme?: 'x-ae' | 'rfc9421';
  /** A key made by `aex keys generate`, waiting for `aex keys register` to replace the registered one. */
  pendingSigningSecretKey?: string;
  /** Operator token, for `aex` commands under `/admin/v1`. */
  adminToken?: string;
}

export interface ProfileFile {
  current?: string;
  profiles: Record<string, Profile>;
}

/** Thrown for anything a person must fix: the message says what and how. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** `$AEX_CONFIG`, else `$XDG_CONFIG_HOME/agent-exchange/config.json`, else `~/.config/agent-exchange/config.json`. */
export function profilePath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.AEX_CONFIG) return env.AEX_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'agent-exchange', 'config.json');
}

/**
 * The profile file, or an empty one when there is none. A file others can read is refused, as ssh
 * refuses such a key: it holds API keys and signing keys.
 */
export function readProfiles(path: string): ProfileFile {
  let text: string;
  try {
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077) throw new UsageError(`${path} can be read by other users (mode ${mode.toString(8)}); it holds secrets. Run: chmod 600 ${path}`);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`${path} is not valid JSON; fix or remove it.`);
  }
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as ProfileFile).profiles !== 'object') throw new UsageError(`${path} has no "profiles" object; fix or remove it.`);
  return parsed as ProfileFile;
}

/** Writes the whole file with mode 0600 (its folder 0700), through a temporary file renamed over it. */
export function writeProfiles(path: string, file: ProfileFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** Adds or replaces a profile; `makeCurrent` (the default) also makes it the one used when none is named. */
export function saveProfile(path: string, name: string, profile: Profile, makeCurrent = true): void {
  const file = readProfiles(path);
  file.profiles[name] = profile;
  if (makeCurrent) file.current = name;
  writeProfiles(path, file);
}

/** Changes fields of an existing profile (`undefined` removes one). */
export function updateProfile(path: string, name: string, change: Partial<Profile>): void {
  const file = readProfiles(path);
  const merged: Record<string, unknown> = { ...file.profiles[name], ...change };
  for (const k of Object.keys(merged)) if (merged[k] === undefined) delete merged[k];
  file.profiles[name] = merged as unknown as Profile;
  writeProfiles(path, file);
}

/**
 * The credentials a tool acts with: the profile named by `AEX_PROFILE` (or the file's current one),
 * each field overridden by its variable — `AEX_URL`, `AEX_AGENT_ID`, `AEX_API_KEY`, `AEX_SIGNING_KEY`,
 * `AEX_SIGNATURE_SCHEME`, `AEX_ADMIN_TOKEN` — so a tool can run from the environment alone.
 */
export function resolveProfile(opts: { env?: NodeJS.ProcessEnv; profile?: string; path?: string } = {}): { name: string | null; profile: Partial<Profile> } {
  const env = opts.env ?? process.env;
  const path = opts.path ?? profilePath(env);
  const file = readProfiles(path);
  const name = opts.profile ?? env.AEX_PROFILE ?? file.current ?? null;
  if (name !== null && (opts.profile !== undefined || env.AEX_PROFILE !== undefined) && !file.profiles[name]) {
    throw new UsageError(`No profile "${name}" in ${path}. Profiles: ${Object.keys(file.profiles).join(', ') || 'none (aex login or aex signup makes one)'}.`);
  }
  const base: Partial<Profile> = name !== null ? { ...file.profiles[name] } : {};
  const fromEnv: Partial<Profile> = {
    ...(env.AEX_URL ? { url: env.AEX_URL } : {}),
    ...(env.AEX_AGENT_ID ? { agentId: env.AEX_AGENT_ID } : {}),
    ...(env.AEX_API_KEY ? { apiKey: env.AEX_API_KEY } : {}),
    ...(env.AEX_SIGNING_KEY ? { signingSecretKey: env.AEX_SIGNING_KEY } : {}),
    ...(env.AEX_SIGNATURE_SCHEME ? { signatureScheme: signatureSchemeOf(env.AEX_SIGNATURE_SCHEME) } : {}),
    ...(env.AEX_ADMIN_TOKEN ? { adminToken: env.AEX_ADMIN_TOKEN } : {}),
  };
  return { name: name !== null && file.profiles[name] ? name : null, profile: { ...base, ...fromEnv } };
}

/** `x-ae` or `rfc9421`, or a UsageError naming both. */
export function signatureSchemeOf(value: string): 'x-ae' | 'rfc9421' {
  if (value === 'x-ae' || value === 'rfc9421') return value;
  throw new UsageError(`The signature scheme must be x-ae (X-AE-Signature headers) or rfc9421 (RFC 9421 HTTP Message Signatures), not "${value}".`);
}

/** A profile with every field an agent needs, or a UsageError naming what is missing and where to set it. */
export function requireAgentProfile(p: Partial<Profile>): Profile {
  const missing = (['url', 'agentId', 'apiKey'] as const).filter((k) => !p[k]);
  if (missing.length > 0) {
    const vars = { url: 'AEX_URL', agentId: 'AEX_AGENT_ID', apiKey: 'AEX_API_KEY' } as const;
    throw new UsageError(`Missing ${missing.join(', ')}: set ${missing.map((k) => vars[k]).join(', ')}, or make a profile with aex login or aex signup.`);
  }
  if (!/^https?:\/\//.test(p.url!)) throw new UsageError(`The exchange URL must start with http:// or https:// (got "${p.url}").`);
  return p as Profile;
}

/** A client acting as the profile's agent. */
export function clientOf(p: Pick<Profile, 'url'> & Partial<Profile>, timeoutMs?: number): ExchangeClient {
  return new ExchangeClient({
    baseUrl: p.url,
    ...(p.apiKey ? { apiKey: p.apiKey } : {}),
    ...(p.signingSecretKey ? { signingSecretKey: p.signingSecretKey } : {}),
    ...(p.signatureScheme ? { signatureScheme: signatureSchemeOf(p.signatureScheme) } : {}),
    ...(p.agentId ? { agentId: p.agentId } : {}),
    ...(p.adminToken ? { adminToken: p.adminToken } : {}),
    ...(timeoutMs ? { timeoutMs } : {}),
  });
}
