import type { Command } from 'commander';
import type { ExchangeClient, Outcome } from '@agent-exchange/client';
import { clientOf, profilePath, requireAgentProfile, resolveProfile, signatureSchemeOf, type Profile } from '@aex/agent-kit';
import type { Context } from './context.js';
import { ok } from './exchange-outcome.js';
import { CliError, EXIT } from './exit-codes.js';
import { globalOptions } from './global-options.js';

/** The profile file the environment names (AEX_CONFIG, XDG_CONFIG_HOME or HOME). */
export const configPath = (ctx: Context): string => profilePath(ctx.env);

/** The profile a command acts as (--profile, AEX_PROFILE or the current one), its URL overridden by --url. */
export function currentProfile(ctx: Context, cmd: Command): { name: string | null; profile: Partial<Profile> } {
  const g = globalOptions(cmd);
  const r = resolveProfile({ env: ctx.env, ...(g.profile ? { profile: g.profile } : {}) });
  return { name: r.name, profile: { ...r.profile, ...(g.url ? { url: g.url } : {}), ...(g.signatureScheme ? { signatureScheme: signatureSchemeOf(g.signatureScheme) } : {}) } };
}

/** The profile's agent and a client acting as it. */
export function actingAgent(ctx: Context, cmd: Command): { profile: Profile; client: ExchangeClient } {
  const profile = requireAgentProfile(currentProfile(ctx, cmd).profile);
  return { profile, client: clientOf(profile) };
}

/** The exchange a command without an agent talks to: --url, AEX_URL, else the profile's. */
export function exchangeUrl(ctx: Context, cmd: Command): string {
  const url = globalOptions(cmd).url ?? ctx.env.AEX_URL ?? currentProfile(ctx, cmd).profile.url;
  if (!url) throw new CliError('Which exchange? Give --url (e.g. http://127.0.0.1:8080) or set AEX_URL.', EXIT.usage);
  return url;
}

/** The profile's account: saved with it, else asked of the exchange (a profile made from the environment). */
export async function accountOf(profile: Profile, client: ExchangeClient): Promise<string> {
  return profile.accountId ?? ok(await client.getAgent(profile.agentId) as Outcome<{ accountId: string }>).accountId;
}
