import type { DidDocument } from '@aex/contracts';
import { signHttpMessage, signRequest } from './signing.js';

/** What the signer needs of the client's options. */
export interface SignerOptions {
  baseUrl: string;
  signingSecretKey?: string;
  signatureScheme?: 'x-ae' | 'rfc9421';
  signingKeyId?: string;
  agentId?: string;
}

/**
 * Signs a client's requests in its scheme: the X-AE-Signature headers (D3), or RFC 9421 with
 * Content-Digest (D20) whose `keyid` is `signingKeyId` or the current key of `agentId`'s DID
 * document, read once and again after the client forgets it (a refusal, a new key registered).
 */
export class RequestSigner {
  private keyIdLookup: Promise<string> | undefined;

  constructor(
    private readonly opts: SignerOptions,
    private readonly didDocument: (agentId: string) => Promise<DidDocument>,
  ) {}

  async headers(method: string, target: string, body: string | undefined): Promise<Record<string, string>> {
    const secretKey = this.opts.signingSecretKey!;
    if (this.opts.signatureScheme !== 'rfc9421') return signRequest(secretKey, { method, target, body });
    return signHttpMessage(secretKey, { method, url: this.opts.baseUrl + target, body, keyId: await this.keyId() });
  }

  forgetKeyId(): void {
    this.keyIdLookup = undefined;
  }

  private keyId(): Promise<string> {
    if (this.opts.signingKeyId) return Promise.resolve(this.opts.signingKeyId);
    const agentId = this.opts.agentId;
    if (!agentId) return Promise.reject(new Error('signatureScheme "rfc9421" needs signingKeyId, or agentId to read it from the agent\'s DID document'));
    this.keyIdLookup ??= this.didDocument(agentId).then((doc) => {
      const id = doc.assertionMethod[0];
      if (id === undefined) throw new Error(`agent ${agentId}'s DID document lists no current key: register one first`);
      return typeof id === 'string' ? id : (id as { id: string }).id;
    });
    return this.keyIdLookup.catch((err: unknown) => {
      this.keyIdLookup = undefined;
      throw err;
    });
  }
}
