import { Type, type Static } from '@sinclair/typebox';
import { Uuid } from './common.js';
import { AgentStatus } from './api/identity.js';

/** Who is calling: resolved by the gateway from the API key (D2) and passed with every RPC. */
export const Principal = Type.Object({
  agentId: Uuid,
  accountId: Uuid,
  /** D2.2: the agent created with the account. */
  isOwner: Type.Boolean(),
  status: AgentStatus,
  parentAgentId: Type.Union([Uuid, Type.Null()]),
  signingKeyPublic: Type.Union([Type.String(), Type.Null()]),
  /** D6.7: N of the current key's id `{didWeb}#key-N` in the agent's DID document (an RFC 9421 `keyid` names it, D20.1). */
  signingKeyNumber: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
  /** D6.8: when a child agent expires; its key is refused from then on, even before identity marks it expired. */
  expiresAt: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
});
export type Principal = Static<typeof Principal>;
