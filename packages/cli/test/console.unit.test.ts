import { describe, expect } from 'vitest';
import { API_KEY, cliTest } from './cli-test.js';

const LINK = { url: 'http://127.0.0.1:8080/console/#/signin?link=Xq3b2k9Ffn0aLr1yqkCqJz5S0mE6VJ1mQbN7oYzT3uA', expiresAt: '2026-01-01T00:02:00.000Z' };

describe('console (D23.4)', () => {
  cliTest('asks the exchange for a sign-in link with the profile\'s key and prints it, never the key', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', '/console/api/sign-in-links', { status: 201, data: LINK });
    const r = await aex(['console']);
    expect(exchange.requests.map((q) => [q.method, q.path, q.headers.authorization])).toEqual([['POST', '/console/api/sign-in-links', `Bearer ${API_KEY}`]]);
    expect(r.stdout).toBe(`Open this link to sign in to the console; it works once, until ${LINK.expiresAt}:\n${LINK.url}\n`);
    expect(r.stdout + r.stderr).not.toContain(API_KEY);
  });

  cliTest('says which profile signs in when the exchange refuses an agent that is not the owner', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', '/console/api/sign-in-links', { status: 403, errors: [{ code: 'FORBIDDEN', message: 'Only your account\'s owner agent may make a sign-in link.' }] });
    const r = await aex(['console']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('FORBIDDEN: Only your account\'s owner agent may make a sign-in link.');
    expect(r.stderr).toContain('Sign in with the owner agent\'s profile: aex --profile OWNER console');
  });

  cliTest('--open without a browser opener on the PATH still prints the link, and says it was not opened', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', '/console/api/sign-in-links', { status: 201, data: LINK });
    const r = await aex(['console', '--open'], { env: { PATH: '' } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(LINK.url);
    expect(r.stdout).toMatch(/Not opened: no \S+ found on this system; open the link yourself\./);
  });
});
