import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, retryDelays, subjectMatches } from '../src/index.js';

describe('D16 configuration', () => {
  it('applies the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      PORT: 8080, HOST: '127.0.0.1', PUBLIC_BASE_URL: 'http://127.0.0.1:8080', PAYMENTS_PROVIDER: 'none', LOG_LEVEL: 'info',
      RATE_LIMIT_READ_PER_MIN: 100, RATE_LIMIT_WRITE_PER_MIN: 30, RATE_LIMIT_DISCOVERY_PER_MIN: 50, RATE_LIMIT_KEY_ROTATION_PER_MIN: 10,
      RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP: 10, REVIEW_WINDOW_SECONDS: 259200, DISPUTE_RESPONSE_SECONDS: 432000, APPROVAL_TTL_SECONDS: 86400, WEBHOOK_TIMEOUT_MS: 15000,
    });
    expect(c.ADMIN_TOKEN).toBeUndefined();
    expect(retryDelays(c)).toEqual([0, 5000, 300000, 1800000, 7200000, 18000000, 36000000, 36000000]);
  });

  it('reads numbers from strings and derives PUBLIC_BASE_URL from HOST and PORT', () => {
    const c = loadConfig({ PORT: '9000', HOST: '0.0.0.0', RATE_LIMIT_READ_PER_MIN: '7' });
    expect(c).toMatchObject({ PORT: 9000, RATE_LIMIT_READ_PER_MIN: 7, PUBLIC_BASE_URL: 'http://0.0.0.0:9000' });
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://x.example/' }).PUBLIC_BASE_URL).toBe('https://x.example');
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['PAYMENTS_PROVIDER', 'stripe-ish'],
    ['RATE_LIMIT_WRITE_PER_MIN', '0'],
    ['PUBLIC_BASE_URL', 'ftp://x'],
    ['WEBHOOK_RETRY_DELAYS_MS', '1,a,3'],
    ['ADMIN_TOKEN', 'short'],
    ['SIGNING_KEY_REPLACEMENT', 'loose'],
    ['TLS_CERT_FILE', '/etc/exchange/cert.pem'],
  ])('stops with a message naming %s for %s', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it('defaults D3.5 replacement to plain and takes signed', () => {
    expect(loadConfig({}).SIGNING_KEY_REPLACEMENT).toBe('plain');
    expect(loadConfig({ SIGNING_KEY_REPLACEMENT: 'signed' }).SIGNING_KEY_REPLACEMENT).toBe('signed');
  });

  it('derives an https PUBLIC_BASE_URL when the gateway serves TLS, and needs the key with the certificate', () => {
    expect(loadConfig({ TLS_CERT_FILE: '/c.pem', TLS_KEY_FILE: '/k.pem', PORT: '8443' }).PUBLIC_BASE_URL).toBe('https://127.0.0.1:8443');
    expect(() => loadConfig({ TLS_KEY_FILE: '/k.pem' })).toThrow('TLS_CERT_FILE');
  });

  it('treats empty variables as unset', () => {
    const c = loadConfig({ ADMIN_TOKEN: '', PORT: '' });
    expect(c.PORT).toBe(8080);
    expect(c.ADMIN_TOKEN).toBeUndefined();
  });
});

describe('subject filters', () => {
  it.each([
    ['a.b.c', 'a.b.c', true],
    ['a.*.c', 'a.x.c', true],
    ['a.*', 'a.x.c', false],
    ['a.>', 'a.x.c', true],
    ['a.>', 'a', false],
    ['a.b', 'a.b.c', false],
  ])('%s matches %s: %s', (filter, subject, expected) => {
    expect(subjectMatches(filter, subject)).toBe(expected);
  });
});
