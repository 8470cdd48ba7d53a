import type { ColumnType } from 'kysely';
import type { PlatformTables } from '@aex/platform';
import type { DelegationRules, TrustOutcome } from '@aex/contracts';

export interface AccountRow {
  id: string;
  accountType: 'individual' | 'organization';
  displayName: string;
  email: string;
  emailNormalized: string;
  metadata: Record<string, unknown>;
  verificationStatus: string;
  defaultDelegation: DelegationRules;
  createdAt: Date;
  updatedAt: Date;
}

export interface AgentRow {
  id: string;
  accountId: string;
  isOwner: boolean;
  name: string;
  agentType: 'persistent' | 'ephemeral' | 'platform_managed';
  status: 'active' | 'deactivated' | 'expired';
  description: string;
  capabilities: string[];
  signingKeyPublic: string | null;
  webhookUrl: string | null;
  delegation: DelegationRules;
  metadata: Record<string, unknown>;
  parentAgentId: string | null;
  expiresAt: Date | null;
  /** D6.8: the budget a child was spawned with (null for other agents). */
  spawnBudgetCents: number | null;
  /** D6.8: whether a child's rules start from its parent's (else from the account's defaults). */
  inheritDelegation: boolean;
  walletOpenedAt: Date | null;
  walletRequestedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface Database extends PlatformTables {
  accounts: AccountRow;
  agents: AgentRow;
  apiKeys: { id: string; agentId: string; keyHash: string; keyPrefix: string; createdAt: Date; revokedAt: Date | null };
  signingKeys: { id: string; agentId: string; publicKey: string; createdAt: Date; revokedAt: Date | null };
  signingKeyOwners: { publicKey: string; agentId: string; createdAt: Date };
  /**
   * `weightedValue` and `halfWeights`: the sums over the agent's `trustOutcomes`, kept by the
   * database on every insert of one (migration 0009); bigint, read as strings.
   */
  trustScores: { agentId: string; score: number; updatedAt: Date; weightedValue: ColumnType<string, never, never>; halfWeights: ColumnType<string, never, never> };
  /** D6.8: a spawn the wallet refused; its child was deleted. */
  spawnRefusals: { childAgentId: string; reason: string; availableCents: number; requiredCents: number; at: Date };
  operatorActions: {
    id: string;
    action: string;
    service: string;
    targetType: string | null;
    targetId: string | null;
    requestId: string;
    details: Record<string, unknown>;
    at: Date;
  };
  trustOutcomes: {
    transactionId: string;
    agentId: string;
    outcome: TrustOutcome;
    qualityScore: number | null;
    late: boolean;
    value: number;
    halfWeights: number;
    endedAt: Date;
  };
}
