import { createHash } from 'node:crypto';
import { AppError, transactionOps, type AgentCardSignaturesView } from '@aex/contracts';
import { callOperation, type Bus, type ExchangeConfig, type Logger } from '@aex/platform';

/**
 * How long a card's signature is served from memory. A receipt-key rotation (D18.4) reaches the
 * cards within this, plus the few seconds a transactions replica that did not rotate takes to see
 * the new key (`key-ring.ts`): the same bound receipts have.
 */
export const CARD_SIGNATURE_FRESH_MS = 5_000;
/** Cards kept: the exchange's and the providers' most recently served. */
const MAX_CARDS = 10_000;

interface Kept {
  signature: AgentCardSignaturesView;
  signedAt: number;
}

/**
 * D21.1: agent cards signed with the exchange's receipt key (D18). The key ring — and the secret it
 * derives from — lives in the transactions service alone, so the gateway asks it to sign
 * (`signAgentCard`), and keeps each card's signature in memory by the card's content for
 * `CARD_SIGNATURE_FRESH_MS`: a card that changes (a service paused) is signed afresh at once, one
 * that does not costs no round trip while its signature is fresh. When transactions cannot answer,
 * the last signature of the same card is served: its key stays in the JWK set once retired, so it
 * keeps verifying.
 */
export class SignedCards {
  private readonly kept = new Map<string, Kept>();
  private readonly signing = new Map<string, Promise<AgentCardSignaturesView>>();

  constructor(private readonly bus: Bus, private readonly config: ExchangeConfig, private readonly now: () => number = Date.now) {}

  /** The card's JSON with `signatures` by the current receipt key (see `signAgentCard` in transactions). */
  async signed(card: Record<string, unknown>, requestId: string, log: Logger): Promise<string> {
    const json = JSON.stringify(card);
    const id = createHash('sha256').update(json).digest('base64url');
    const hit = this.kept.get(id);
    let signature: AgentCardSignaturesView;
    if (hit && this.now() - hit.signedAt < CARD_SIGNATURE_FRESH_MS) {
      signature = hit.signature;
    } else {
      try {
        signature = await this.sign(id, card, requestId);
      } catch (err) {
        if (!hit) throw err;
        log.warn({ err }, 'agent card not signed afresh: serving its last signature');
        signature = hit.signature;
      }
    }
    return JSON.stringify({ ...card, signatures: signature.signatures });
  }

  /** One request to transactions per card at a time; what it answers is kept. */
  private sign(id: string, card: Record<string, unknown>, requestId: string): Promise<AgentCardSignaturesView> {
    let pending = this.signing.get(id);
    if (!pending) {
      pending = this.ask(card, requestId).then((signature) => {
        this.keep(id, signature);
        return signature;
      }).finally(() => this.signing.delete(id));
      this.signing.set(id, pending);
    }
    return pending;
  }

  private async ask(card: Record<string, unknown>, requestId: string): Promise<AgentCardSignaturesView> {
    const answer = await callOperation(this.bus, transactionOps.signAgentCard, { ctx: { requestId, principal: null, admin: false }, input: { path: {}, query: {}, body: { card: card as { name: string; supportedInterfaces: unknown[] } } } }, { timeoutMs: this.config.RPC_TIMEOUT_MS });
    if (!answer.ok) throw AppError.many(answer.errors);
    return answer.data;
  }

  private keep(id: string, signature: AgentCardSignaturesView): void {
    this.kept.delete(id);
    this.kept.set(id, { signature, signedAt: this.now() });
    if (this.kept.size > MAX_CARDS) this.kept.delete(this.kept.keys().next().value!);
  }
}
