import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/index.js';

// D22.1: the catalog's sentence encoder, checked once at start like every other setting.

const openai = { DISCOVERY_ENCODER: 'openai', DISCOVERY_ENCODER_URL: 'http://tei.internal:8080/v1', DISCOVERY_ENCODER_MODEL: 'BAAI/bge-small-en-v1.5' };

describe('the discovery encoder settings (D22.1)', () => {
  it('default to the builtin encoder, batches of 64 and a 10 s timeout', () => {
    expect(loadConfig({})).toMatchObject({ DISCOVERY_ENCODER: 'builtin', DISCOVERY_ENCODER_BATCH_SIZE: 64, DISCOVERY_ENCODER_TIMEOUT_MS: 10_000 });
    expect(loadConfig({}).DISCOVERY_ENCODER_URL).toBeUndefined();
  });

  it('take an openai endpoint with its model, key, dimensions, batch size and timeout', () => {
    const c = loadConfig({ ...openai, DISCOVERY_ENCODER_API_KEY: 'sk-abc123', DISCOVERY_ENCODER_DIMENSIONS: '384', DISCOVERY_ENCODER_BATCH_SIZE: '16', DISCOVERY_ENCODER_TIMEOUT_MS: '2500' });
    expect(c).toMatchObject({ ...openai, DISCOVERY_ENCODER_API_KEY: 'sk-abc123', DISCOVERY_ENCODER_DIMENSIONS: 384, DISCOVERY_ENCODER_BATCH_SIZE: 16, DISCOVERY_ENCODER_TIMEOUT_MS: 2500 });
  });

  it.each([
    ['DISCOVERY_ENCODER_URL', { DISCOVERY_ENCODER: 'openai', DISCOVERY_ENCODER_MODEL: 'm' }, /DISCOVERY_ENCODER_URL is required when DISCOVERY_ENCODER is openai/],
    ['DISCOVERY_ENCODER_MODEL', { DISCOVERY_ENCODER: 'openai', DISCOVERY_ENCODER_URL: 'http://tei/v1' }, /DISCOVERY_ENCODER_MODEL is required when DISCOVERY_ENCODER is openai/],
    ['DISCOVERY_ENCODER', { DISCOVERY_ENCODER: 'sentence-bert' }, /DISCOVERY_ENCODER/],
    ['DISCOVERY_ENCODER_URL', { ...openai, DISCOVERY_ENCODER_URL: 'tei:8080' }, /DISCOVERY_ENCODER_URL/],
    ['DISCOVERY_ENCODER_URL', { ...openai, DISCOVERY_ENCODER_URL: 'https://user:secret@api.example.com/v1' }, /DISCOVERY_ENCODER_URL must not hold credentials/],
    ['DISCOVERY_ENCODER_MODEL', { ...openai, DISCOVERY_ENCODER_MODEL: 'two words' }, /DISCOVERY_ENCODER_MODEL/],
    ['DISCOVERY_ENCODER_MODEL', { ...openai, DISCOVERY_ENCODER_MODEL: 'model@256' }, /DISCOVERY_ENCODER_MODEL/],
    ['DISCOVERY_ENCODER_DIMENSIONS', { ...openai, DISCOVERY_ENCODER_DIMENSIONS: '0' }, /DISCOVERY_ENCODER_DIMENSIONS/],
    ['DISCOVERY_ENCODER_DIMENSIONS', { ...openai, DISCOVERY_ENCODER_DIMENSIONS: '100000' }, /DISCOVERY_ENCODER_DIMENSIONS/],
    ['DISCOVERY_ENCODER_BATCH_SIZE', { ...openai, DISCOVERY_ENCODER_BATCH_SIZE: '0' }, /DISCOVERY_ENCODER_BATCH_SIZE/],
    ['DISCOVERY_ENCODER_TIMEOUT_MS', { ...openai, DISCOVERY_ENCODER_TIMEOUT_MS: '10' }, /DISCOVERY_ENCODER_TIMEOUT_MS/],
    ['DISCOVERY_ENCODER_API_KEY', { ...openai, DISCOVERY_ENCODER_API_KEY: 'has a space' }, /DISCOVERY_ENCODER_API_KEY/],
  ])('stop the start naming %s', (_name, env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never put the key in the message of a refused setting', () => {
    expect(() => loadConfig({ ...openai, DISCOVERY_ENCODER_API_KEY: 'sk-secret value' })).toThrow(/^(?!.*sk-secret).*$/s);
  });
});
