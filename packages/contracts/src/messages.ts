import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Timestamp, Uuid } from './common.js';
import { AgentStatus } from './api/identity.js';
import { ServiceStatus } from './api/catalog.js';
import type { ServiceName } from './subjects.js';

/**
 * Domain events and saga commands. Each is defined once: its subject suffix (after `<ns>.evt.` or
 * `<ns>.cmd.`) and the schema of its `data`. Consumers validate what they receive (STYLE.md 2).
 */
export interface MessageDef<S extends TSchema = TSchema> {
  kind: 'event' | 'command';
  /** e.g. `identity.agent.created` (events) or `wallet.openWallet` (commands). */
  type: string;
  owner: ServiceName;
  data: S;
}

const event = <S extends TSchema>(owner: ServiceName, type: string, data: S): MessageDef<S> => ({ kind: 'event', owner, type, data });
const command = <S extends TSchema>(owner: ServiceName, type: string, data: S): MessageDef<S> => ({ kind: 'command', owner, type, data });

/** The envelope every event and command travels in; `id` is also the JetStream `Nats-Msg-Id`. */
export const MessageEnvelope = Type.Object({
  id: Uuid,
  type: Type.String(),
  occurredAt: Timestamp,
  data: Type.Unknown(),
});
export type MessageEnvelope<T = unknown> = { id: string; type: string; occurredAt: string; data: T };

const TrustScore = Type.Integer({ minimum: 0, maximum: 100 });

const AgentFacts = {
  agentId: Uuid,
  accountId: Uuid,
  name: Type.String(),
  status: AgentStatus,
  parentAgentId: Type.Union([Uuid, Type.Null()]),
};

export const events = {
  /** `trustScore` is the starting score (D15.2), so replicas need not assume it. */
  agentCreated: event('identity', 'identity.agent.created', Type.Object({ ...AgentFacts, trustScore: TrustScore })),
  agentUpdated: event('identity', 'identity.agent.updated', Type.Object({ ...AgentFacts })),
  agentStatusChanged: event('identity', 'identity.agent.status_changed', Type.Object({ ...AgentFacts, previousStatus: AgentStatus })),
  /** D15.2: the provider's score was recomputed; the catalog's replica sorts and filters on it. */
  trustScoreChanged: event('identity', 'identity.agent.trust_changed', Type.Object({ agentId: Uuid, trustScore: TrustScore, previousTrustScore: TrustScore })),
  agentKeyRotated: event('identity', 'identity.agent.key_rotated', Type.Object({ agentId: Uuid, keyPrefix: Type.String() })),
  walletOpened: event('wallet', 'wallet.wallet.opened', Type.Object({ operationId: Uuid, agentId: Uuid, walletId: Uuid })),
  walletFunded: event('wallet', 'wallet.wallet.funded', Type.Object({ agentId: Uuid, walletId: Uuid, amountCents: Type.Integer(), sessionId: Type.String() })),
  /**
   * A service contract was registered or changed (D7): `revision` grows with every change of its
   * schemas, pricing, SLA or version; the contract of a revision is read with `catalogOps.getContract`.
   */
  serviceChanged: event('catalog', 'catalog.service.changed', Type.Object({
    serviceId: Uuid,
    agentId: Uuid,
    revision: Type.Integer({ minimum: 1 }),
    version: Type.String(),
    status: ServiceStatus,
    change: Type.Union(['registered', 'updated', 'paused', 'resumed', 'deactivated'].map((c) => Type.Literal(c))),
  })),
  walletPaidOut: event('wallet', 'wallet.wallet.paid_out', Type.Object({ agentId: Uuid, walletId: Uuid, amountCents: Type.Integer(), payoutId: Type.String() })),
};

export const commands = {
  /** Saga step of agent creation: identity asks the wallet service to open the agent's wallet. */
  openWallet: command('wallet', 'wallet.openWallet', Type.Object({ operationId: Uuid, agentId: Uuid, accountId: Uuid })),
};

export type MessageData<M extends MessageDef> = Static<M['data']>;
