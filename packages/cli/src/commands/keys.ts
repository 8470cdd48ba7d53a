import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { generateSigningKey } from '@agent-exchange/client';
import { clientOf, updateProfile } from '@aex/agent-kit';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { CliError, EXIT } from '../exit-codes.js';
import { actingAgent, configPath, currentProfile } from '../profile-loading.js';
import { show } from '../show.js';

/** `aex keys …`: a new signing key, made here and then registered (signed by the old one), and a new API key. */
export function registerKeyCommands(program: Command, ctx: Context): void {
  const keys = program.command('keys').description('the agent\'s signing key and API key');
  keys
    .command('generate')
    .description('make a new Ed25519 signing key, kept in the profile until `aex keys register`')
    .action((_o: unknown, cmd: Command) => {
      const { name } = currentProfile(ctx, cmd);
      if (!name) throw new CliError('Keys are kept in a profile: make one first with aex signup or aex login.', EXIT.usage);
      const pair = generateSigningKey();
      updateProfile(configPath(ctx), name, { pendingSigningSecretKey: pair.secretKey });
      show(ctx, cmd, { profile: name, publicKey: pair.publicKey }, (d) => `New signing key ${d.publicKey}\nRegister it with: aex keys register\n`);
    });
  keys
    .command('register')
    .description('register the generated signing key (replacing the registered one, which signs the change)')
    .action(async (_o: unknown, cmd: Command) => {
      const { name } = currentProfile(ctx, cmd);
      const { profile } = actingAgent(ctx, cmd);
      const next = profile.pendingSigningSecretKey ?? profile.signingSecretKey;
      if (!next) throw new CliError('No signing key to register: run aex keys generate first.', EXIT.usage);
      const client = clientOf({ ...profile, signingSecretKey: next });
      const previous = profile.pendingSigningSecretKey && profile.signingSecretKey ? { previousSecretKey: profile.signingSecretKey } : {};
      const updated = ok(await client.registerSigningKey(profile.agentId, previous));
      if (name) updateProfile(configPath(ctx), name, { signingSecretKey: next, pendingSigningSecretKey: undefined });
      show(ctx, cmd, { agentId: profile.agentId, signingKeyPublic: updated.signingKeyPublic }, (d) => `Registered signing key ${d.signingKeyPublic} for agent ${d.agentId}.\n`);
    });
  keys
    .command('rotate')
    .description('replace the API key (the old one stops working at once); the new one is saved in the profile')
    .action(async (_o: unknown, cmd: Command) => {
      const { name } = currentProfile(ctx, cmd);
      const { profile, client } = actingAgent(ctx, cmd);
      const rotated = ok(await client.rotateKey(profile.agentId, { idempotencyKey: randomUUID() }));
      if (name) updateProfile(configPath(ctx), name, { apiKey: rotated.apiKey });
      show(ctx, cmd, { agentId: profile.agentId, keyPrefix: rotated.keyPrefix, saved: Boolean(name) }, (d) => `New API key ${d.keyPrefix}… ${d.saved ? 'saved in the profile' : 'not saved (no profile): it was issued, and the old key is revoked'}.\n`);
    });
}
