import { createHash, verify } from 'node:crypto';
import { parseDictionary, serializeInnerList, type InnerList, type Item } from 'structured-headers';
import { MAX_SKEW_MS, publicKeyObject } from './signature.js';

/**
 * RFC 9421 HTTP Message Signatures with an RFC 9530 `Content-Digest`, as D20.1 accepts them in place
 * of the `X-AE-*` headers: one Ed25519 signature by the agent's registered key whose covered
 * components include `@method`, the target (`@target-uri`, or `@authority` + `@path` + `@query`
 * when a query is sent) and, with a body, `content-digest`; parameters `created` (within 300 s),
 * `expires` (optional, not past), `keyid` (the key's id in the agent's DID document), `alg`
 * (`ed25519`, optional) and `nonce` (optional; used once per key, D24.2).
 */
export interface HttpSignatureInput {
  signatureInput: string;
  signature: string | undefined;
  contentDigest: string | undefined;
  method: string;
  /** The request target as sent: path plus `?query`. */
  target: string;
  /** Origins (`https://host:port`) the client may have signed `@target-uri` / `@authority` against. */
  origins: string[];
  /** Every header of the request, names in lower case (covered fields are read from them). */
  headers: Record<string, string | string[] | undefined>;
  rawBody: Uint8Array | undefined;
  publicKey: string | null;
  /** The agent's DID (`did:web:…`): a `keyid` must name one of its keys. */
  did: string;
  /** The current key's id in the DID document, when known. */
  currentKeyId: string | null;
  nowMs: number;
}

export interface HttpSignatureHelp {
  scheme: 'rfc9421';
  required: { components: string[]; parameters: string[]; contentDigest: string | null };
  keyid: string | null;
  /** The signature base the server verified, for the first origin it tried; null until the input parsed. */
  signatureBase: string | null;
}

export type HttpSignatureCheck =
  /** `signature` and `signatureInput`: the members of the two headers for the verified signature alone. */
  | { ok: true; label: string; signature: string; signatureInput: string; created: number; signatureBytes: Buffer; keyid: string; nonce?: string }
  | { ok: false; code: 'SIGNATURE_INVALID' | 'SIGNATURE_EXPIRED'; message: string; help: HttpSignatureHelp };

const REQUIRED_PARAMS = ['created', 'keyid'];

export function checkHttpMessageSignature(input: HttpSignatureInput): HttpSignatureCheck {
  let signatureBase: string | null = null;
  const bodySent = input.rawBody !== undefined && input.rawBody.length > 0;
  const query = queryOf(input.target);
  const help = (): HttpSignatureHelp => ({
    scheme: 'rfc9421',
    required: {
      components: ['@method', query === null ? '@target-uri' : '@target-uri (or @authority, @path and @query)', ...(bodySent ? ['content-digest'] : [])],
      parameters: ['created', 'keyid', 'alg="ed25519" (optional)', 'expires (optional)'],
      contentDigest: bodySent ? `sha-256=:${createHash('sha256').update(input.rawBody!).digest('base64')}:` : null,
    },
    keyid: input.currentKeyId,
    signatureBase,
  });
  const refuse = (message: string, code: 'SIGNATURE_INVALID' | 'SIGNATURE_EXPIRED' = 'SIGNATURE_INVALID'): HttpSignatureCheck => ({ ok: false, code, message, help: help() });

  const chosen = chooseSignature(input);
  if (typeof chosen === 'string') return refuse(chosen);
  const { label, inner, signatureBytes } = chosen;
  const [items, params] = inner;
  const components = items.map(([name]) => name);
  if (components.some((c) => typeof c !== 'string')) return refuse('Signature-Input names its covered components as quoted strings.');
  const names = components as string[];
  if (new Set(names).size !== names.length) return refuse('Signature-Input covers a component twice.');
  if (items.some(([, p]) => p.size > 0)) return refuse('Covered components with parameters (such as ;sf or ;key) are not accepted here.');

  for (const p of REQUIRED_PARAMS) if (!params.has(p)) return refuse(`Signature-Input must carry the ${p} parameter.`);
  const created = params.get('created');
  const expires = params.get('expires');
  const keyid = params.get('keyid');
  const alg = params.get('alg');
  if (!Number.isInteger(created)) return refuse('The created parameter must be an integer (seconds since the epoch).');
  if (expires !== undefined && !Number.isInteger(expires)) return refuse('The expires parameter must be an integer (seconds since the epoch).');
  if (typeof keyid !== 'string') return refuse('The keyid parameter must be a string: the key\'s id in the agent\'s DID document.');
  if (alg !== undefined && alg !== 'ed25519') return refuse('The alg parameter, when given, must be "ed25519".');
  const nonce = params.get('nonce');
  if (nonce !== undefined && (typeof nonce !== 'string' || nonce.length === 0)) return refuse('The nonce parameter, when given, must be a non-empty string (it is used once per key).');
  if (Math.abs(input.nowMs - (created as number) * 1000) > MAX_SKEW_MS) return refuse('The signature\'s created time is more than 5 minutes away from the server clock; sign with the current time.', 'SIGNATURE_EXPIRED');
  if (expires !== undefined && (expires as number) * 1000 <= input.nowMs) return refuse('The signature has expired (its expires parameter is past).', 'SIGNATURE_EXPIRED');
  const keyProblem = keyidProblem(keyid, input.did, input.currentKeyId);
  if (keyProblem) return refuse(keyProblem);

  if (!names.includes('@method')) return refuse('The signature must cover @method.');
  const coversTarget = names.includes('@target-uri') || (names.includes('@authority') && names.includes('@path') && (query === null || names.includes('@query')));
  if (!coversTarget) return refuse(`The signature must cover @target-uri, or @authority and @path${query === null ? '' : ' and @query'}.`);
  if (bodySent) {
    if (!names.includes('content-digest')) return refuse('A request with a body must cover content-digest.');
    const digestProblem = contentDigestProblem(input.contentDigest, input.rawBody!);
    if (digestProblem) return refuse(digestProblem);
  }

  if (!input.publicKey) return refuse('The agent has no registered signingKeyPublic: register one with PATCH /v1/agents/{id} first.');
  const key = publicKeyObject(input.publicKey);
  if (!key) return refuse('The agent\'s registered signingKeyPublic is not a usable Ed25519 key.');
  if (signatureBytes.length !== 64) return refuse('The Signature is not a 64-byte Ed25519 signature.');
  const paramsLine = `"@signature-params": ${serializeInnerList(inner)}`;
  for (const origin of input.origins) {
    const lines: string[] = [];
    for (const name of names) {
      const value = componentValue(name, input, origin);
      if (value === undefined) return refuse(`The covered component "${name}" is not in the request (or not supported here).`);
      lines.push(`"${name}": ${value}`);
    }
    const base = [...lines, paramsLine].join('\n');
    signatureBase ??= base;
    if (verify(null, Buffer.from(base, 'utf8'), key, signatureBytes)) {
      return {
        ok: true, label, signature: `${label}=:${signatureBytes.toString('base64')}:`, signatureInput: `${label}=${serializeInnerList(inner)}`, created: created as number,
        signatureBytes, keyid, ...(typeof nonce === 'string' ? { nonce } : {}),
      };
    }
  }
  return refuse('The signature does not verify against the registered key: compare your signature base with details.signatureBase.');
}

/** The one signature to verify: the only one, or the one whose keyid names a key of this agent (D20.1). */
function chooseSignature(input: HttpSignatureInput): { label: string; inner: InnerList; signatureBytes: Buffer } | string {
  let inputs: Map<string, Item | InnerList>;
  let signatures: Map<string, Item | InnerList>;
  try {
    inputs = parseDictionary(input.signatureInput);
  } catch {
    return 'Signature-Input is not a valid structured-field dictionary (RFC 8941).';
  }
  if (input.signature === undefined) return 'A request with Signature-Input must carry the Signature header.';
  try {
    signatures = parseDictionary(input.signature);
  } catch {
    return 'Signature is not a valid structured-field dictionary (RFC 8941).';
  }
  const ours = [...inputs.entries()].filter(([, v]) => Array.isArray(v[0]) && String(v[1].get('keyid') ?? '').startsWith(`${input.did}#`));
  const candidates = ours.length > 0 ? ours : [...inputs.entries()];
  if (candidates.length !== 1) return 'Signature-Input must hold one signature by the agent\'s key (its keyid naming the key in the agent\'s DID document).';
  const [label, value] = candidates[0]!;
  if (!Array.isArray(value[0])) return `Signature-Input "${label}" must be an inner list of covered components.`;
  const sig = signatures.get(label);
  if (!sig || Array.isArray(sig[0]) || !(sig[0] instanceof ArrayBuffer)) return `Signature must carry "${label}" as a byte sequence (:base64:).`;
  return { label, inner: value as InnerList, signatureBytes: Buffer.from(sig[0]) };
}

function keyidProblem(keyid: string, did: string, currentKeyId: string | null): string | null {
  if (!keyid.startsWith(`${did}#key-`)) return `The keyid must name the agent's key as its DID document lists it (${currentKeyId ?? `${did}#key-N`}).`;
  if (currentKeyId !== null && keyid !== currentKeyId) return `The keyid names a replaced key; the agent's current key is ${currentKeyId}.`;
  return null;
}

/** RFC 9530: every sha-256 / sha-512 digest given must match the body, and at least one is given. */
function contentDigestProblem(header: string | undefined, body: Uint8Array): string | null {
  if (header === undefined) return 'A request with a body must carry Content-Digest: sha-256=:<base64 of the SHA-256 of the body>: (RFC 9530).';
  let digests: Map<string, Item | InnerList>;
  try {
    digests = parseDictionary(header);
  } catch {
    return 'Content-Digest is not a valid structured-field dictionary (RFC 9530).';
  }
  let checked = 0;
  for (const alg of ['sha-256', 'sha-512'] as const) {
    const entry = digests.get(alg);
    if (entry === undefined) continue;
    if (!(entry[0] instanceof ArrayBuffer)) return `Content-Digest ${alg} must be a byte sequence (:base64:).`;
    const expected = createHash(alg.replace('-', '')).update(body).digest();
    if (!expected.equals(Buffer.from(entry[0]))) return `Content-Digest ${alg} does not match the body as sent.`;
    checked += 1;
  }
  return checked > 0 ? null : 'Content-Digest must carry a sha-256 (or sha-512) digest of the body.';
}

function queryOf(target: string): string | null {
  const i = target.indexOf('?');
  return i < 0 ? null : target.slice(i);
}

/** RFC 9421 §2.1 (fields) and §2.2 (derived components) values; undefined when absent or unsupported. */
function componentValue(name: string, input: HttpSignatureInput, origin: string): string | undefined {
  const url = new URL(input.target, origin);
  switch (name) {
    case '@method': return input.method.toUpperCase();
    case '@target-uri': return `${origin}${input.target}`;
    case '@authority': return url.host.toLowerCase();
    case '@scheme': return url.protocol.slice(0, -1);
    case '@request-target': return input.target;
    case '@path': return url.pathname;
    case '@query': return queryOf(input.target) ?? '?';
  }
  if (name.startsWith('@')) return undefined;
  const v = input.headers[name];
  if (v === undefined) return undefined;
  return (Array.isArray(v) ? v : [v]).map((s) => s.trim()).join(', ');
}
