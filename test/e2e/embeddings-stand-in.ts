import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

// A local stand-in for an OpenAI-compatible embeddings endpoint (`POST /v1/embeddings`), as Text
// Embeddings Inference, Ollama, vLLM or LiteLLM serve it. Its vectors are deterministic and carry
// meaning the tests can rely on: each content word is stemmed crudely, words of one topic below
// share a direction, and a text's vector is the sum of its words' (so texts on one topic are close,
// others nearly orthogonal). Every model has directions of its own: two models never give the same
// vector. It records every request and can be scripted to answer late, with an error or with garbage,
// to hold requests until released, or to refuse connections.

/** Words of one topic, by topic: what the stand-in's "meaning" is. */
const TOPICS: Record<string, string[]> = {
  weather: ['weather', 'forecast', 'temperature', 'precipitation', 'rain', 'storm', 'stormy', 'umbrella', 'tomorrow', 'hourly', 'sunny', 'wind'],
  money: ['currency', 'currencies', 'yen', 'euro', 'dollar', 'exchange', 'convert', 'converter', 'amount', 'rate', 'money'],
  medicine: ['drug', 'medication', 'medicine', 'ibuprofen', 'warfarin', 'interaction', 'pill', 'dose', 'pharmacy'],
  images: ['image', 'picture', 'photo', 'resize', 'resizer', 'scale', 'shrink', 'width', 'height', 'thumbnail'],
};
const TOPIC_OF = new Map(Object.entries(TOPICS).flatMap(([topic, words]) => words.map((w) => [w, topic] as const)));
const STOP = new Set('a an and are at be between by can do for from how i in is it many of on or should the to what whether will with any my me much'.split(' '));

/** The stand-in's dimensions when a request asks for none. */
export const DEFAULT_DIMENSIONS = 256;

export interface EmbeddingsRequest {
  model: string;
  input: string[];
  dimensions: number | undefined;
  encodingFormat: unknown;
  authorization: string | undefined;
  /** When it arrived (Date.now()). */
  at: number;
}

/** What a scripted answer is: a status, a body of the test's choosing, headers, a wait before it. */
export interface ScriptedAnswer {
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}
/** Called for every request (`n` counts them from 1); undefined answers normally. */
export type Script = (req: EmbeddingsRequest, n: number) => ScriptedAnswer | undefined;

export interface EmbeddingsStandIn {
  /** The base URL the catalog is configured with (`DISCOVERY_ENCODER_URL`). */
  url: string;
  /** Every request received, in order. */
  requests: EmbeddingsRequest[];
  script: Script | null;
  /** Requests matching `which` wait until the returned function is called (which answers them normally). */
  hold(which?: (req: EmbeddingsRequest) => boolean): () => void;
  /** How many requests are being held now. */
  readonly held: number;
  /** Stops listening and drops open connections: connections are refused until `accept`. */
  refuse(): Promise<void>;
  accept(): Promise<void>;
  close(): Promise<void>;
}

/** The vector the stand-in gives `text` under `model` (not normalised: the client must do it). */
export function standInVector(model: string, text: string, dims: number): number[] {
  const words = (text.toLowerCase().match(/[a-z]+/g) ?? []).filter((w) => !STOP.has(w)).map(stem);
  const out = new Array<number>(dims).fill(0);
  for (const w of words.length > 0 ? words : ['(nothing)']) {
    const direction = pseudoRandom(`${model}/${TOPIC_OF.get(w) ?? w}`, dims);
    for (let k = 0; k < dims; k++) out[k]! += 3 * direction[k]!;
  }
  return out;
}

/** A topic word with its plural or verb ending ("forecasts", "converts") counts as that word. */
function stem(word: string): string {
  if (TOPIC_OF.has(word)) return word;
  for (const suffix of ['s', 'es', 'ing', 'ed']) {
    if (word.endsWith(suffix) && TOPIC_OF.has(word.slice(0, -suffix.length))) return word.slice(0, -suffix.length);
  }
  return word;
}

/** `dims` values in [−1, 1] drawn from the SHA-256 of the seed: the same seed, the same direction. */
function pseudoRandom(seed: string, dims: number): number[] {
  const out: number[] = [];
  for (let block = 0; out.length < dims; block++) {
    const bytes = createHash('sha256').update(`${seed}#${block}`).digest();
    for (let i = 0; i + 1 < bytes.length && out.length < dims; i += 2) out.push(bytes.readInt16LE(i) / 32768);
  }
  return out;
}

export async function startEmbeddingsStandIn(): Promise<EmbeddingsStandIn> {
  const requests: EmbeddingsRequest[] = [];
  const sockets = new Set<Socket>();
  let holds: { which: (req: EmbeddingsRequest) => boolean; released: Promise<void>; waiting: number }[] = [];
  const server = createServer((req, res) => void handle(req, res));
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const standIn: EmbeddingsStandIn = {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    script: null,
    hold(which = () => true) {
      let release!: () => void;
      const entry = { which, released: new Promise<void>((r) => (release = r)), waiting: 0 };
      holds.push(entry);
      return () => {
        holds = holds.filter((h) => h !== entry);
        release();
      };
    },
    get held() {
      return holds.reduce((n, h) => n + h.waiting, 0);
    },
    async refuse() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
    async accept() {
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    async close() {
      for (const h of holds) h.waiting = 0;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
    },
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/embeddings') return send(res, 404, JSON.stringify({ error: { message: 'not found' } }));
    let body: { model?: unknown; input?: unknown; dimensions?: unknown; encoding_format?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
    } catch {
      return send(res, 400, JSON.stringify({ error: { message: 'body is not JSON' } }));
    }
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (typeof body.model !== 'string' || !Array.isArray(input) || !input.every((t) => typeof t === 'string')) {
      return send(res, 400, JSON.stringify({ error: { message: 'model and input are required' } }));
    }
    const request: EmbeddingsRequest = {
      model: body.model, input: input as string[], dimensions: typeof body.dimensions === 'number' ? body.dimensions : undefined,
      encodingFormat: body.encoding_format, authorization: req.headers.authorization, at: Date.now(),
    };
    requests.push(request);
    const scripted = standIn.script?.(request, requests.length);
    for (const h of holds.filter((x) => x.which(request))) {
      h.waiting += 1;
      await h.released;
      h.waiting = Math.max(0, h.waiting - 1);
    }
    if (scripted?.delayMs) await new Promise((r) => setTimeout(r, scripted.delayMs));
    if (scripted?.status !== undefined || scripted?.body !== undefined) {
      return send(res, scripted.status ?? 200, scripted.body ?? '{}', scripted.headers);
    }
    const dims = request.dimensions ?? DEFAULT_DIMENSIONS;
    const data = request.input.map((text, index) => ({ object: 'embedding', index, embedding: standInVector(request.model, text, dims) }));
    // Items out of order, as an endpoint may answer them: the client orders them by `index`.
    send(res, 200, JSON.stringify({ object: 'list', model: request.model, data: data.reverse(), usage: { prompt_tokens: 0, total_tokens: 0 } }));
  }

  return standIn;
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body);
}
