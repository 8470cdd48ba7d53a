import { NEGOTIATION_MAX_MESSAGES, type NegotiateBody, type NegotiationMessageType, type Pricing } from '@aex/contracts';
import { offerRefusal } from './offers.js';

export interface LastMessage {
  fromAgentId: string;
  round: number;
  messageType: NegotiationMessageType;
  priceCents: number | null;
}

export type NegotiationRuling =
  | { kind: 'refused'; code: 'NEGOTIATION_OUT_OF_TURN' | 'INVALID_NEGOTIATION_MESSAGE'; message: string; field?: string }
  /** Record the message; `ends` names the cancellation it causes (D11.3), `agreed` the accepted price. */
  | { kind: 'message'; round: number; ends: 'negotiation_rejected' | 'negotiation_withdrawn' | 'negotiation_rounds_exhausted' | null; agreedPriceCents: number | null };

/**
 * D11: whether `caller` may send `body` after `last`, and what it does. Turn first (the party that
 * did not send the last message), then the message's own rules: no second `initial_offer`; a
 * `counter_offer` names a price within the service's negotiable bounds; `accept` carries no terms
 * and agrees to the latest offer's price; the 10th message, unless an accept, ends the negotiation.
 */
export function decideNegotiationMessage(last: LastMessage, caller: string, body: NegotiateBody, pricing: Pricing, maxTransactionCents: number): NegotiationRuling {
  if (last.fromAgentId === caller) return { kind: 'refused', code: 'NEGOTIATION_OUT_OF_TURN', message: 'It is the other party\'s turn: wait for their answer to your last message.' };
  const round = last.round + 1;
  const invalid = (message: string, field?: string): NegotiationRuling => ({ kind: 'refused', code: 'INVALID_NEGOTIATION_MESSAGE', message, ...(field ? { field } : {}) });
  switch (body.type) {
    case 'initial_offer':
      return invalid('The initial offer was made when the transaction was created; answer with counter_offer, accept, reject or withdraw.', '/body/type');
    case 'accept': {
      if (Object.keys(body.terms).length > 0) return invalid('accept carries no terms: it agrees to the latest offer on the table.', '/body/terms');
      if (last.priceCents === null) return invalid('There is no offer with a price to accept.');
      return { kind: 'message', round, ends: null, agreedPriceCents: last.priceCents };
    }
    case 'counter_offer': {
      const price = body.terms.priceCents;
      if (price === undefined) return invalid('counter_offer needs terms.priceCents.', '/body/terms/priceCents');
      const outside = offerRefusal(pricing, price, maxTransactionCents);
      if (outside) return invalid(outside.message, '/body/terms/priceCents');
      return { kind: 'message', round, ends: round >= NEGOTIATION_MAX_MESSAGES ? 'negotiation_rounds_exhausted' : null, agreedPriceCents: null };
    }
    case 'reject':
      return { kind: 'message', round, ends: 'negotiation_rejected', agreedPriceCents: null };
    case 'withdraw':
      return { kind: 'message', round, ends: 'negotiation_withdrawn', agreedPriceCents: null };
  }
}
