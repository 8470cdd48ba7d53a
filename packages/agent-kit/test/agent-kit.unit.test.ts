import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkAgainstContract, describeProblems, profilePath, readProfiles, requireAgentProfile, resolveProfile, saveProfile, UsageError } from '../src/index.js';

const dirs: string[] = [];
const tempFile = () => {
  const dir = mkdtempSync(join(tmpdir(), 'aex-kit-'));
  dirs.push(dir);
  return join(dir, 'nested', 'config.json');
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const profile = { url: 'http://127.0.0.1:8080', agentId: 'a1', apiKey: 'ae_live_file', signingSecretKey: 's1' };

describe('the profile file', () => {
  it('lives under XDG_CONFIG_HOME, else ~/.config, unless AEX_CONFIG names it', () => {
    expect(profilePath({ HOME: '/home/x' })).toBe('/home/x/.config/agent-exchange/config.json');
    expect(profilePath({ HOME: '/home/x', XDG_CONFIG_HOME: '/cfg' })).toBe('/cfg/agent-exchange/config.json');
    expect(profilePath({ AEX_CONFIG: '/elsewhere.json' })).toBe('/elsewhere.json');
  });

  it('is written with mode 0600 in a 0700 folder, and the saved profile becomes the current one', () => {
    const path = tempFile();
    saveProfile(path, 'work', profile);
    saveProfile(path, 'home', { ...profile, agentId: 'a2' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(path, '..')).mode & 0o777).toBe(0o700);
    expect(readProfiles(path)).toMatchObject({ current: 'home', profiles: { work: { agentId: 'a1' }, home: { agentId: 'a2' } } });
  });

  it('is refused when others can read it, and when it is not JSON', () => {
    const path = tempFile();
    saveProfile(path, 'work', profile);
    chmodSync(path, 0o644);
    expect(() => readProfiles(path)).toThrow(/can be read by other users .*chmod 600/);
    chmodSync(path, 0o600);
    writeFileSync(path, '{ nope');
    expect(() => readProfiles(path)).toThrow(UsageError);
  });

  it('answers the named or current profile, each field overridden by its variable', () => {
    const path = tempFile();
    saveProfile(path, 'work', profile);
    expect(resolveProfile({ env: {}, path })).toEqual({ name: 'work', profile });
    expect(resolveProfile({ env: { AEX_API_KEY: 'ae_live_env', AEX_URL: 'https://x.example' }, path }).profile).toEqual({ ...profile, apiKey: 'ae_live_env', url: 'https://x.example' });
    expect(() => resolveProfile({ env: { AEX_PROFILE: 'other' }, path })).toThrow(/No profile "other" .* Profiles: work/);
    // From the environment alone, without a file.
    const none = resolveProfile({ env: { AEX_URL: 'http://e', AEX_AGENT_ID: 'a', AEX_API_KEY: 'k' }, path: tempFile() });
    expect(requireAgentProfile(none.profile)).toEqual({ url: 'http://e', agentId: 'a', apiKey: 'k' });
  });

  it('says which fields are missing and where to set them', () => {
    expect(() => requireAgentProfile({ url: 'http://e' })).toThrow('Missing agentId, apiKey: set AEX_AGENT_ID, AEX_API_KEY, or make a profile with aex login or aex signup.');
    expect(() => requireAgentProfile({ url: 'ftp://e', agentId: 'a', apiKey: 'k' })).toThrow(/must start with http/);
  });
});

describe('checking a value against a contract before sending it', () => {
  const schema = { type: 'object', properties: { text: { type: 'string', minLength: 1 }, at: { type: 'string', format: 'date-time' } }, required: ['text'], additionalProperties: false };

  it('passes what the schema accepts, and names every problem with a pointer otherwise', () => {
    expect(checkAgainstContract(schema, { text: 'hi' }, '/input')).toEqual({ ok: true });
    const r = checkAgainstContract(schema, { extra: 1, at: 'yesterday' }, '/input');
    expect(r.ok).toBe(false);
    if (r.ok !== false) return;
    expect(describeProblems(r.problems).split('\n').sort()).toEqual(['"/input/at" must match format "date-time"', '"/input/extra" is not allowed by the schema', '"/input/text" is required']);
  });

  it('leaves to the exchange a schema it cannot compile here, and never fetches a remote $ref', () => {
    expect(checkAgainstContract({ $ref: 'https://evil.example/schema.json' }, {}, '/input')).toMatchObject({ ok: 'unchecked' });
    expect(checkAgainstContract(null, {}, '/input')).toMatchObject({ ok: 'unchecked' });
  });
});
