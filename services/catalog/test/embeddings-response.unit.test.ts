import { describe, expect, it } from 'vitest';
import { readEmbeddingsAnswer, retryAfterMs } from '../src/discovery/embeddings-response.js';
import { endpointOf, parseOpenAIModel } from '../src/discovery/encoder-factory.js';
import { openaiModelName } from '../src/discovery/openai-encoder.js';

// D22.1: what an embeddings endpoint answers is checked before any of it reaches the index.

const item = (index: number, embedding: unknown) => ({ index, embedding });

describe('an embeddings answer, checked', () => {
  it('gives unit vectors in the order of the texts, whatever the order of the items', () => {
    const answer = readEmbeddingsAnswer({ data: [item(1, [0, 2]), item(0, [3, 4])], model: 'm' }, 2, null);
    expect(answer.ok).toBe(true);
    if (!answer.ok) return;
    expect(answer.vectors.map((v) => [...v])).toEqual([[expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)], [0, 1]]);
  });

  it('takes the dimensions asked for and nothing else', () => {
    expect(readEmbeddingsAnswer({ data: [item(0, [1, 2, 3])] }, 1, 3).ok).toBe(true);
    expect(readEmbeddingsAnswer({ data: [item(0, [1, 2, 3])] }, 1, 4)).toEqual({ ok: false, reason: 'the embeddings endpoint answered an embedding of 3 dimensions where 4 were expected (index 0)' });
  });

  it.each([
    ['nothing', null, /without a data list/],
    ['a list that is not under data', [item(0, [1])], /without a data list/],
    ['more items than texts', { data: [item(0, [1]), item(1, [1]), item(2, [1])] }, /3 embeddings for 2 texts/],
    ['an item that is not an object', { data: [item(0, [1]), 'x'] }, /not an object/],
    ['an index that is not an integer', { data: [item(0, [1]), item(0.5, [1])] }, /index out of range \(0.5\)/],
    ['a negative index', { data: [item(0, [1]), item(-1, [1])] }, /index out of range/],
    ['an index twice', { data: [item(1, [1]), item(1, [1])] }, /index 1 twice/],
    ['an embedding that is a string', { data: [item(0, 'AAAA'), item(1, [1])] }, /not a list of numbers/],
    ['an empty embedding', { data: [item(0, []), item(1, [1])] }, /0 dimensions/],
    ['too many dimensions', { data: [item(0, new Array(9000).fill(1)), item(1, [1])] }, /9000 dimensions/],
    ['a null value', { data: [item(0, [1, null]), item(1, [1, 2])] }, /not a finite number/],
    ['a value too large to square', { data: [item(0, [1e300, 1e300]), item(1, [1, 2])] }, /too large/],
    ['embeddings of two lengths', { data: [item(0, [1, 2]), item(1, [1])] }, /1 dimensions where 2 were expected \(index 1\)/],
    ['all zeros', { data: [item(0, [0, 0]), item(1, [1, 2])] }, /no direction/],
  ])('refuses %s, saying why', (_what, body, reason) => {
    const answer = readEmbeddingsAnswer(body, 2, null);
    expect(answer.ok).toBe(false);
    if (!answer.ok) expect(answer.reason).toMatch(reason);
  });
});

describe('Retry-After', () => {
  it('reads seconds and HTTP dates, and nothing else', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('2', now)).toBe(2000);
    expect(retryAfterMs('0.5', now)).toBe(500);
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:03 GMT', now)).toBe(3000);
    expect(retryAfterMs('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs(null, now)).toBeNull();
    expect(retryAfterMs('soon', now)).toBeNull();
  });
});

describe('the names of the models embeddings are stored with', () => {
  it('name an openai model with its dimensions when they are asked for, and read back the same parts', () => {
    expect(openaiModelName('text-embedding-3-small')).toBe('openai:text-embedding-3-small');
    expect(openaiModelName('text-embedding-3-small', 256)).toBe('openai:text-embedding-3-small@256');
    expect(parseOpenAIModel('openai:text-embedding-3-small@256')).toEqual({ model: 'text-embedding-3-small', dimensions: 256 });
    expect(parseOpenAIModel('openai:nomic-embed-text:latest')).toEqual({ model: 'nomic-embed-text:latest' });
    expect(parseOpenAIModel('openai:@cf/baai/bge-base-en-v1.5')).toEqual({ model: '@cf/baai/bge-base-en-v1.5' });
    expect(parseOpenAIModel('use-512')).toBeNull();
  });

  it('record an endpoint by its base URL, whatever its trailing slash', () => {
    expect(endpointOf('http://tei:8080/v1/')).toBe('http://tei:8080/v1');
    expect(endpointOf('https://api.example.com/v1#x')).toBe('https://api.example.com/v1');
    expect(endpointOf('http://ollama:11434/v1')).toBe(endpointOf('http://ollama:11434/v1/'));
  });
});
