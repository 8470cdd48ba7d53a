// How a client is configured, and what one request may add.

export interface ClientOptions {
  /** Gateway URL, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** The agent's API key (D2); without it only public routes work. */
  apiKey?: string;
  /** Base64 Ed25519 secret key; when set every authenticated request is signed (D3). */
  signingSecretKey?: string;
  /**
   * How requests are signed: `x-ae` (default) — the X-AE-Signature headers (D3); `rfc9421` — RFC 9421
   * `Signature-Input`/`Signature` with `Content-Digest` (D20), whose `keyid` is `signingKeyId` or, when
   * not given, read once from the DID document of `agentId`.
   */
  signatureScheme?: 'x-ae' | 'rfc9421';
  /** The key's id in the agent's DID document (`did:web:…#key-N`), for `rfc9421`. */
  signingKeyId?: string;
  /** The agent this client acts as: where an `rfc9421` client finds its `signingKeyId`. */
  agentId?: string;
  /** Operator token for `/admin/v1/*` (D15.3). */
  adminToken?: string;
  /** Replaces the global fetch (tests, proxies). */
  fetch?: typeof fetch;
  /** Per-request timeout; default 30 s. */
  timeoutMs?: number;
  /**
   * How many times a write answered `202` with an unknown outcome is repeated with the answer's
   * `Idempotency-Key` to learn it (docs/api.md "When the outcome is not known"); default 5, 0 to
   * get that answer itself.
   */
  outcomeRepeats?: number;
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  /** D5 idempotency key for POST/PATCH/PUT/DELETE. */
  idempotencyKey?: string;
  /** Force signing on or off for this request (default: on when a signing key is configured). */
  sign?: boolean;
  headers?: Record<string, string>;
  /** `raw`: the body is returned as parsed JSON without the envelope (the did:web document). */
  raw?: boolean;
}
