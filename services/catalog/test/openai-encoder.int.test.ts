import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '@aex/platform';
import { OpenAIEmbeddingsEncoder, type OpenAIEncoderOptions } from '../src/discovery/openai-encoder.js';
import { standInVector, startEmbeddingsStandIn, type EmbeddingsStandIn } from '../../../test/e2e/embeddings-stand-in.js';

// D22.1: the client of an OpenAI-compatible embeddings endpoint, against a local stand-in of one
// (real HTTP on the loopback; nothing else). What discovery does with it is in
// test/e2e/discovery-encoder*.test.ts.

const KEY = 'sk-test-do-not-log-7f3a9c';
let standIn: EmbeddingsStandIn;
let logLines: string[];
const encoders: OpenAIEmbeddingsEncoder[] = [];

beforeAll(async () => {
  standIn = await startEmbeddingsStandIn();
});
afterAll(async () => {
  await standIn.close();
});
// Each test's encoders stop probing when it ends: none of them asks the stand-in during another test.
afterEach(async () => {
  await Promise.all(encoders.splice(0).map((e) => e.close()));
});
beforeEach(() => {
  standIn.script = null;
  standIn.requests.length = 0;
  logLines = [];
});

async function encoder(over: Partial<OpenAIEncoderOptions> = {}): Promise<OpenAIEmbeddingsEncoder> {
  const logger = createLogger('test', 'debug', 'json', { write: (line: string) => void logLines.push(line) });
  const e = new OpenAIEmbeddingsEncoder({ url: standIn.url, model: 'alpha', apiKey: KEY, dimensions: 64, batchSize: 3, timeoutMs: 2000, ...over }, logger);
  encoders.push(e);
  return e.start();
}

const length = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const logged = (level: number) => logLines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level === level);

describe('an OpenAI-compatible embeddings endpoint as the sentence encoder (D22.1)', () => {
  it('sends the model, dimensions and key, in batches of at most the batch size, and gives unit vectors in the texts\' order', async () => {
    const e = await encoder();
    expect([e.name, e.dims, e.problem]).toEqual(['openai:alpha@64', 64, null]);
    const texts = ['one weather', 'two money', 'three images', 'four medicine', 'five rain', 'six yen', 'seven photo', 'eight'];
    standIn.requests.length = 0;
    const vectors = await e.embed(texts);
    expect(standIn.requests.map((r) => r.input.length)).toEqual([3, 3, 2]);
    expect(standIn.requests.flatMap((r) => r.input)).toEqual(texts);
    for (const r of standIn.requests) expect(r).toMatchObject({ model: 'alpha', dimensions: 64, encodingFormat: 'float', authorization: `Bearer ${KEY}` });
    vectors.forEach((v, i) => {
      expect(v).toHaveLength(64);
      expect(length(v)).toBeCloseTo(1, 5);
      const raw = standInVector('alpha', texts[i]!, 64);
      const norm = Math.sqrt(raw.reduce((s, x) => s + x * x, 0));
      expect(v[5]).toBeCloseTo(raw[5]! / norm, 5);
    });
    expect(logLines.join('\n')).not.toContain(KEY);
    // Nor does the encoder show it when logged or printed itself.
    expect(inspect(e, { depth: 5, showHidden: true }) + JSON.stringify(e)).not.toContain(KEY);
  });

  it('learns the model\'s own dimensions from its first answer when none are asked for, and names the model without them', async () => {
    const e = await encoder({ dimensions: undefined, model: 'beta' });
    expect([e.name, e.dims]).toEqual(['openai:beta', 256]);
    expect(standIn.requests[0]!.dimensions).toBeUndefined();
    // An answer of other dimensions later is an error, never a vector of the wrong shape.
    standIn.script = () => ({ body: JSON.stringify({ data: [{ index: 0, embedding: [1, 0, 0] }] }) });
    await expect(e.embed(['x'])).rejects.toThrow(/3 dimensions where 256 were expected/);
  });

  it('retries a 429 once, after the wait its Retry-After asks for', async () => {
    const e = await encoder();
    standIn.script = (_r, n) => (n === 2 ? { status: 429, headers: { 'retry-after': '1' } } : undefined);
    const [v] = await e.embed(['weather']);
    expect(v).toHaveLength(64);
    const [first, second] = standIn.requests.slice(1);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(990);
    expect(e.problem).toBeNull();
  });

  it('retries a 500 once, and fails the call (the encoder down, saying why) when the retry fails too', async () => {
    const e = await encoder();
    standIn.script = (_r, n) => (n >= 2 ? { status: 503 } : undefined);
    await expect(e.embed(['weather'])).rejects.toThrow('the embeddings endpoint answered 503');
    expect(standIn.requests).toHaveLength(3);
    expect(e.problem).toMatch(/answered 503; retrying/);
  });

  it('does not retry when Retry-After asks for a wait beyond the timeout', async () => {
    const e = await encoder();
    standIn.script = (_r, n) => (n >= 2 ? { status: 429, headers: { 'retry-after': '30' } } : undefined);
    await expect(e.embed(['weather'])).rejects.toThrow(/429 and asked to wait beyond the timeout/);
    expect(standIn.requests).toHaveLength(2);
  });

  it('fails a call whose texts the endpoint refuses (400) without counting the encoder down', async () => {
    const e = await encoder();
    standIn.script = (_r, n) => (n === 2 ? { status: 400, body: '{"error":{"message":"input too long"}}' } : undefined);
    await expect(e.embed(['weather'])).rejects.toThrow(/refused the texts \(400\)/);
    expect(e.problem).toBeNull();
  });

  it.each([
    ['not JSON', 'this is not json', /not JSON/],
    ['no data list', '{"object":"list"}', /without a data list/],
    ['fewer embeddings than texts', '{"data":[{"index":0,"embedding":[1,2]}]}', /1 embeddings for 2 texts/],
    ['an index twice', '{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[1,2]}]}', /index 0 twice/],
    ['an index out of range', '{"data":[{"index":0,"embedding":[1,2]},{"index":7,"embedding":[1,2]}]}', /index out of range/],
    ['a value that is not a number', '{"data":[{"index":0,"embedding":[1,"2"]},{"index":1,"embedding":[1,2]}]}', /not a finite number/],
    ['an embedding as base64', '{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAAA"}]}', /not a list of numbers/],
    ['embeddings of two lengths', '{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1,2,3]}]}', /3 dimensions where 2 were expected/],
    ['a zero vector', '{"data":[{"index":0,"embedding":[0,0]},{"index":1,"embedding":[1,2]}]}', /no direction/],
  ])('takes an answer with %s as a failure of the encoder, with its reason', async (_what, body, reason) => {
    // A model of two dimensions (its first answer says so), then the garbage.
    standIn.script = () => ({ body: '{"data":[{"index":0,"embedding":[3,4]}]}' });
    const e = await encoder({ dimensions: undefined, model: 'gamma', batchSize: 8 });
    expect([e.problem, e.dims]).toEqual([null, 2]);
    standIn.script = () => ({ body });
    await expect(e.embed(['weather', 'money'])).rejects.toThrow(reason);
    expect(e.problem).toMatch(reason);
  });

  it('counts a timeout as the endpoint failing, logged once, and comes back by itself when it answers again, logged once', async () => {
    const e = await encoder({ timeoutMs: 300 });
    standIn.script = () => ({ delayMs: 1500 });
    await expect(e.embed(['weather'])).rejects.toThrow('the embeddings endpoint did not answer within 300 ms');
    await expect(e.embed(['money'])).rejects.toThrow(/did not answer/);
    expect(e.problem).toBe('the embeddings endpoint did not answer within 300 ms; retrying');
    expect(logged(50).map((l) => l.msg)).toEqual([expect.stringContaining('the embeddings endpoint is failing')]);
    standIn.script = null;
    await expect.poll(() => e.problem, { timeout: 15_000, interval: 100 }).toBeNull();
    expect(logged(50)).toHaveLength(1);
    expect(logged(30).map((l) => l.msg)).toEqual([expect.stringContaining('answers again')]);
    expect(logLines.join('\n')).not.toContain(KEY);
  });

  it('starts with the endpoint refusing connections, says so, and comes back when it listens again', async () => {
    await standIn.refuse();
    let e: OpenAIEmbeddingsEncoder;
    try {
      e = await encoder();
      expect(e.problem).toMatch(/^the embeddings endpoint cannot be reached \(\w+\); retrying$/);
      await expect(e.embed(['weather'])).rejects.toThrow(/cannot be reached/);
    } finally {
      await standIn.accept();
    }
    await expect.poll(() => e.problem, { timeout: 15_000, interval: 100 }).toBeNull();
    expect((await e.embed(['weather']))[0]).toHaveLength(64);
  });
});
