import { Type } from '@aex/contracts';

/** The most dimensions a sentence encoder may give: each catalog replica keeps one byte per dimension per service. */
export const MAX_ENCODER_DIMENSIONS = 8192;

/**
 * D22.1: where the catalog's sentence embeddings come from. `builtin` is the Universal Sentence
 * Encoder inside the catalog; `openai` is any OpenAI-compatible embeddings endpoint (Text
 * Embeddings Inference, Ollama, vLLM, LiteLLM or a hosted API), called at `<URL>/embeddings`.
 */
export const DiscoveryEncoderSettings = {
  DISCOVERY_ENCODER: Type.Union([Type.Literal('builtin'), Type.Literal('openai')], { default: 'builtin' }),
  /**
   * The endpoint's base URL (usually ending in `/v1`). Required with `openai`; with `builtin` it is
   * only used to keep serving an openai model while the catalog re-embeds away from it.
   */
  DISCOVERY_ENCODER_URL: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://' })),
  /**
   * The model the endpoint is asked for (`model` of the request). Required with `openai`. Not ending
   * in `@<digits>`: that suffix of a stored model's name is its dimensions (`openai:<model>@<dims>`).
   */
  DISCOVERY_ENCODER_MODEL: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^(?!.*@[0-9]+$)\\S+$' })),
  /** Sent as `Authorization: Bearer …`. A secret: never logged, never answered. */
  DISCOVERY_ENCODER_API_KEY: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, pattern: '^[\\x21-\\x7e]+$' })),
  /** Asked of the endpoint as `dimensions`; every vector it returns must have that length. */
  DISCOVERY_ENCODER_DIMENSIONS: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ENCODER_DIMENSIONS })),
  /** Texts per request: a larger embedding is sent as several requests of at most this many. */
  DISCOVERY_ENCODER_BATCH_SIZE: Type.Integer({ default: 64, minimum: 1, maximum: 2048 }),
  /** How long one request (with its one retry after a 429 or 5xx) may take before it counts as failed. */
  DISCOVERY_ENCODER_TIMEOUT_MS: Type.Integer({ default: 10_000, minimum: 100, maximum: 600_000 }),
};

/** What the schema alone cannot say: `openai` needs its endpoint and model. Returns the variable at fault and why, or null. */
export function discoveryEncoderProblem(cfg: { DISCOVERY_ENCODER: string; DISCOVERY_ENCODER_URL?: string | undefined; DISCOVERY_ENCODER_MODEL?: string | undefined }): { variable: string; message: string } | null {
  if (cfg.DISCOVERY_ENCODER_URL !== undefined && /^https?:\/\/[^/?#]*@/.test(cfg.DISCOVERY_ENCODER_URL)) {
    return { variable: 'DISCOVERY_ENCODER_URL', message: 'must not hold credentials: give the key as DISCOVERY_ENCODER_API_KEY (it is kept out of logs).' };
  }
  if (cfg.DISCOVERY_ENCODER !== 'openai') return null;
  if (cfg.DISCOVERY_ENCODER_URL === undefined) {
    return { variable: 'DISCOVERY_ENCODER_URL', message: 'is required when DISCOVERY_ENCODER is openai: the base URL of the embeddings endpoint (e.g. http://tei:8080/v1).' };
  }
  if (cfg.DISCOVERY_ENCODER_MODEL === undefined) {
    return { variable: 'DISCOVERY_ENCODER_MODEL', message: 'is required when DISCOVERY_ENCODER is openai: the model the endpoint embeds with.' };
  }
  return null;
}
