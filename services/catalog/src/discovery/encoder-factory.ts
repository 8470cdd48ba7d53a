import type { ExchangeConfig, Logger } from '@aex/platform';
import { OpenAIEmbeddingsEncoder, openaiModelName } from './openai-encoder.js';
import { UniversalSentenceEncoder, type SentenceEncoder } from './sentence-encoder.js';

/** The builtin model's name, as stored with its embeddings. */
export const BUILTIN_MODEL = 'use-512';

/** A model this catalog replica cannot compute embeddings with, and why (in words an agent may read). */
export class ModelUnavailable extends Error {}

type EncoderSettings = Pick<ExchangeConfig, 'DISCOVERY_ENCODER' | 'DISCOVERY_ENCODER_URL' | 'DISCOVERY_ENCODER_MODEL' | 'DISCOVERY_ENCODER_API_KEY' | 'DISCOVERY_ENCODER_DIMENSIONS' | 'DISCOVERY_ENCODER_BATCH_SIZE' | 'DISCOVERY_ENCODER_TIMEOUT_MS'>;

/**
 * D22.1: sentence encoders by the name of their model. The configured one, and the one whose
 * embeddings the catalog holds when they differ (a switch of models keeps serving the old model
 * until every service has a vector of the new one): the builtin model from its name alone, an openai
 * model from its name on the configured endpoint — not on another one, whose model of the same name
 * may be another model altogether.
 */
export class EncoderFactory {
  /** The model this replica is configured for. */
  readonly configured: string;
  /** Its endpoint (base URL without credentials), null for the builtin model. */
  readonly endpoint: string | null;

  constructor(private readonly settings: EncoderSettings, private readonly logger: Logger) {
    this.endpoint = settings.DISCOVERY_ENCODER_URL ? endpointOf(settings.DISCOVERY_ENCODER_URL) : null;
    this.configured = settings.DISCOVERY_ENCODER === 'openai' ? openaiModelName(settings.DISCOVERY_ENCODER_MODEL!, settings.DISCOVERY_ENCODER_DIMENSIONS) : BUILTIN_MODEL;
  }

  /** The endpoint recorded with the configured model (null for the builtin one). */
  get configuredEndpoint(): string | null {
    return this.settings.DISCOVERY_ENCODER === 'openai' ? this.endpoint : null;
  }

  /**
   * An encoder of `model`, loaded or reached once (a failing endpoint still gives one, probing in the
   * background); `endpoint` is where the catalog's embeddings of an openai model were made. Throws
   * ModelUnavailable when this replica cannot compute that model's embeddings.
   */
  async build(model: string, endpoint: string | null): Promise<SentenceEncoder> {
    if (model === BUILTIN_MODEL) return UniversalSentenceEncoder.load(this.logger);
    const openai = parseOpenAIModel(model);
    if (!openai) throw new ModelUnavailable(`the catalog's embeddings are of the model ${model}, which this catalog does not know`);
    const url = this.settings.DISCOVERY_ENCODER_URL;
    if (url === undefined) throw new ModelUnavailable(`the catalog's embeddings are of ${model}, and this catalog has no embeddings endpoint to compute them (DISCOVERY_ENCODER_URL)`);
    if (endpoint !== null && endpoint !== this.endpoint) throw new ModelUnavailable(`the catalog's embeddings of ${model} were made by another embeddings endpoint than this catalog's`);
    const encoder = new OpenAIEmbeddingsEncoder({
      url, model: openai.model, apiKey: this.settings.DISCOVERY_ENCODER_API_KEY, dimensions: openai.dimensions,
      batchSize: this.settings.DISCOVERY_ENCODER_BATCH_SIZE, timeoutMs: this.settings.DISCOVERY_ENCODER_TIMEOUT_MS,
    }, this.logger);
    return encoder.start();
  }
}

/** `openai:<model>` or `openai:<model>@<dims>` → its parts; null for any other name. */
export function parseOpenAIModel(name: string): { model: string; dimensions?: number } | null {
  const m = /^openai:(\S+?)(?:@([1-9][0-9]*))?$/.exec(name);
  if (!m) return null;
  return m[2] === undefined ? { model: m[1]! } : { model: m[1]!, dimensions: Number(m[2]) };
}

/** A base URL as recorded with embeddings: without a fragment or a trailing slash on its path. */
export function endpointOf(url: string): string {
  const u = new URL(url);
  u.hash = '';
  u.pathname = u.pathname.replace(/\/+$/, '');
  return u.toString();
}
