import { Type, type Static, type TSchema, type TObject } from '@sinclair/typebox';
import { Empty, PageQuery, Strict } from './common.js';
import type { ErrorEntry } from './errors.js';
import type { PaginationInfo } from './envelope.js';
import type { Principal } from './principal.js';
import type { ServiceName } from './subjects.js';
import * as I from './api/identity.js';
import * as W from './api/wallet.js';
import * as C from './api/catalog.js';
import * as R from './api/receipts.js';
import * as S from './api/sessions.js';
import * as T from './api/transactions.js';
import * as H from './api/webhooks.js';
import * as X from './api/x402.js';
import { MessageEnvelope } from './messages.js';

/**
 * A request/reply operation of a service. `input` is `{ path, query, body }` — the same parts the
 * gateway validates, so a field pointer (`/body/name`, `/query/limit`) means the same everywhere.
 */
export interface Operation<In extends TObject = TObject, Out extends TSchema = TSchema> {
  service: ServiceName;
  name: string;
  input: In;
  output: Out;
  /** Whether a caller must be authenticated (the gateway enforces, the service re-checks). */
  auth: 'agent' | 'none' | 'admin';
  /**
   * Whether the operation changes state (every operation behind POST/PATCH/PUT/DELETE). Its handler
   * must make the change through `ctx.effect`, which records an Idempotency-Key in the same database
   * transaction (D5.5); the handler type enforces it.
   */
  effect: boolean;
}

const operation = <In extends TObject, Out extends TSchema>(
  service: ServiceName, name: string, auth: Operation['auth'], input: In, output: Out,
): Operation<In, Out> => ({ service, name, auth, input, output, effect: false });
/** An operation that changes state (see `Operation.effect`). */
const effect = <In extends TObject, Out extends TSchema>(
  service: ServiceName, name: string, auth: Operation['auth'], input: In, output: Out,
): Operation<In, Out> & { effect: true } => ({ service, name, auth, input, output, effect: true });

const parts = <P extends TObject, Q extends TObject, B extends TSchema>(path: P, query: Q, body: B) => Strict({ path, query, body });

export const identityOps = {
  createAccount: effect('identity', 'createAccount', 'none', parts(Empty, Empty, I.CreateAccountBody), I.NewAccountView),
  getAccount: operation('identity', 'getAccount', 'agent', parts(I.AccountPath, Empty, Type.Any()), I.AccountView),
  /** The account's agents in full (D2.3: full to the account's own agents), the owner agent first. */
  listAccountAgents: operation('identity', 'listAccountAgents', 'agent', parts(I.AccountPath, PageQuery, Type.Any()), Type.Array(I.FullAgentView)),
  updateAccount: effect('identity', 'updateAccount', 'agent', parts(I.AccountPath, Empty, I.UpdateAccountBody), I.AccountView),
  setAccountDelegation: effect('identity', 'setAccountDelegation', 'agent', parts(I.AccountPath, Empty, I.DelegationRules), I.DelegationRules),
  /** D23.3: changes only the rules named; `null` removes one. */
  patchAccountDelegation: effect('identity', 'patchAccountDelegation', 'agent', parts(I.AccountPath, Empty, I.DelegationPatch), I.DelegationPatchView),
  createAgent: effect('identity', 'createAgent', 'agent', parts(Empty, Empty, I.CreateAgentBody), I.NewAgentView),
  getAgent: operation('identity', 'getAgent', 'agent', parts(I.AgentPath, Empty, Type.Any()), I.AgentView),
  getTrust: operation('identity', 'getTrust', 'agent', parts(I.AgentPath, Empty, Type.Any()), I.TrustView),
  updateAgent: effect('identity', 'updateAgent', 'agent', parts(I.AgentPath, Empty, I.UpdateAgentBody), I.FullAgentView),
  deactivateAgent: effect('identity', 'deactivateAgent', 'agent', parts(I.AgentPath, Empty, Type.Any()), I.FullAgentView),
  /** D10.1, D6.8: the agent's own rules and those in force (agents of its account, D2.3). */
  getAgentDelegation: operation('identity', 'getAgentDelegation', 'agent', parts(I.AgentPath, Empty, Type.Any()), I.DelegationInForceView),
  setAgentDelegation: effect('identity', 'setAgentDelegation', 'agent', parts(I.AgentPath, Empty, I.DelegationRules), I.DelegationRules),
  /** D23.3: changes only the rules named; `null` removes one. */
  patchAgentDelegation: effect('identity', 'patchAgentDelegation', 'agent', parts(I.AgentPath, Empty, I.DelegationPatch), I.DelegationPatchView),
  spawnAgent: effect('identity', 'spawnAgent', 'agent', parts(I.AgentPath, Empty, I.SpawnAgentBody), I.SpawnedAgentView),
  rotateKey: effect('identity', 'rotateKey', 'agent', parts(I.AgentPath, Empty, Type.Any()), I.RotatedKeyView),
  /** Operator (D15.3): deactivate any agent. */
  suspendAgent: effect('identity', 'suspendAgent', 'admin', parts(I.AgentPath, Empty, Type.Any()), I.FullAgentView),
  /** Operator (D15.3): the audit log of every operator action, newest first. */
  listOperatorActions: operation('identity', 'listOperatorActions', 'admin', parts(Empty, PageQuery, Type.Any()), Type.Array(I.OperatorActionView)),
  getDidDocument: operation('identity', 'getDidDocument', 'none', parts(I.AgentPath, Empty, Type.Any()), I.DidDocument),
  /**
   * Internal (no route): the delegation rules in force for an agent (D10.1) with the facts the
   * transaction service checks them against. Identity owns the rules; a transactions replica keeps
   * what it read in memory only while identity keeps that memory true (docs/gateway-caches.md).
   */
  effectiveDelegation: operation(
    'identity', 'effectiveDelegation', 'none',
    parts(I.AgentPath, Empty, Type.Any()),
    // `parentAgentId`: a child's rules in force depend on its parent's too (D6.8), which the
    // transaction service's cache of them must know to forget them with the parent's.
    // `ownerAgentId`: who approves the agent's purchases (D10.3); the account's owner agent never changes.
    Type.Object({ agentId: Type.String(), accountId: Type.String(), ownerAgentId: Type.String(), parentAgentId: Type.Union([Type.String(), Type.Null()]), status: I.AgentStatus, rules: I.DelegationRules }),
  ),
  /** Internal: key hash → principal (the gateway's key cache fills from it). */
  authenticate: operation(
    'identity', 'authenticate', 'none',
    parts(Empty, Empty, Strict({ keyHash: Type.String({ pattern: '^[0-9a-f]{64}$' }) })),
    Type.Any(),
  ),
};

export const walletOps = {
  getWallet: operation('wallet', 'getWallet', 'agent', parts(W.WalletPath, Empty, Type.Any()), W.WalletView),
  fund: effect('wallet', 'fund', 'agent', parts(W.WalletPath, Empty, W.FundBody), W.FundView),
  withdraw: effect('wallet', 'withdraw', 'agent', parts(W.WalletPath, Empty, W.WithdrawBody), W.WithdrawView),
  listLedger: operation('wallet', 'listLedger', 'agent', parts(W.WalletPath, PageQuery, Type.Any()), Type.Array(W.LedgerEntryView)),
  checkLedger: operation('wallet', 'checkLedger', 'admin', parts(Empty, Empty, Type.Any()), W.LedgerCheckView),
  /** Public: the checkout page of a funding session (whoever holds its unguessable id). */
  getCheckout: operation('wallet', 'getCheckout', 'none', parts(W.CheckoutPath, Empty, Type.Any()), W.CheckoutView),
  listFundings: operation('wallet', 'listFundings', 'agent', parts(W.WalletPath, PageQuery, Type.Any()), Type.Array(W.FundingView)),
  listPayouts: operation('wallet', 'listPayouts', 'agent', parts(W.WalletPath, PageQuery, Type.Any()), Type.Array(W.PayoutView)),
  reconcilePayments: operation('wallet', 'reconcilePayments', 'admin', parts(Empty, W.ReconciliationQuery, Type.Any()), W.ReconciliationView),
  linkPayoutAccount: effect('wallet', 'linkPayoutAccount', 'agent', parts(W.PayoutLinkPath, Empty, Type.Any()), W.PayoutLinkView),
  /** Public: Stripe's signed events (D13.7); the signature is the authentication. */
  stripeWebhook: effect('wallet', 'stripeWebhook', 'none', parts(Empty, Empty, W.StripeWebhookBody), W.StripeWebhookView),
};

export const catalogOps = {
  createService: effect('catalog', 'createService', 'agent', parts(Empty, Empty, C.CreateServiceBody), C.ServiceView),
  getService: operation('catalog', 'getService', 'agent', parts(C.ServicePath, Empty, Type.Any()), C.ServiceView),
  updateService: effect('catalog', 'updateService', 'agent', parts(C.ServicePath, Empty, C.UpdateServiceBody), C.ServiceView),
  deleteService: effect('catalog', 'deleteService', 'agent', parts(C.ServicePath, Empty, Type.Any()), C.ServiceView),
  listServices: operation('catalog', 'listServices', 'agent', parts(Empty, C.ListServicesQuery, Type.Any()), Type.Array(C.ServiceListItem)),
  discover: effect('catalog', 'discover', 'agent', parts(Empty, Empty, C.DiscoverBody), C.DiscoverView),
  /** Internal (no route): one revision of a contract, the latest when `revision` is absent (D7.6). */
  getContract: operation('catalog', 'getContract', 'none', parts(C.ContractPath, C.ContractQuery, Type.Any()), C.ContractView),
  /**
   * Internal (no route): a provider and its active services, for the gateway's A2A agent card; an
   * inactive provider shows none, and `provider` is null for an agent the catalog has never seen.
   */
  providerServices: operation('catalog', 'providerServices', 'none', parts(C.ProviderPath, Empty, Type.Any()), C.ProviderServicesView),
  /**
   * Internal (no route): identity hands the catalog an agent's status change directly, before
   * answering its caller, so that listing and discovery reflect a deactivation at once (D6.5). The
   * same event also arrives through JetStream, and is then found applied.
   */
  applyAgentEvent: operation('catalog', 'applyAgentEvent', 'none', parts(Empty, Empty, MessageEnvelope), Type.Object({ applied: Type.Boolean() })),
};

const TxParts = <B extends TSchema>(body: B) => parts(T.TransactionPath, Empty, body);

export const transactionOps = {
  createTransaction: effect('transactions', 'createTransaction', 'agent', parts(Empty, Empty, T.CreateTransactionBody), T.TransactionView),
  getTransaction: operation('transactions', 'getTransaction', 'agent', TxParts(Type.Any()), T.TransactionView),
  listTransactions: operation('transactions', 'listTransactions', 'agent', parts(Empty, T.ListTransactionsQuery, Type.Any()), Type.Array(T.TransactionView)),
  negotiate: effect('transactions', 'negotiate', 'agent', TxParts(T.NegotiateBody), T.TransactionView),
  listNegotiations: operation('transactions', 'listNegotiations', 'agent', TxParts(Type.Any()), Type.Array(T.NegotiationView)),
  start: effect('transactions', 'start', 'agent', TxParts(Empty), T.TransactionView),
  deliver: effect('transactions', 'deliver', 'agent', TxParts(T.DeliverBody), T.TransactionView),
  verify: effect('transactions', 'verify', 'agent', TxParts(T.VerifyBody), T.TransactionView),
  cancel: effect('transactions', 'cancel', 'agent', TxParts(T.CancelBody), T.TransactionView),
  /** D10.3: the consumer's account owner agent decides a purchase awaiting its approval. */
  approve: effect('transactions', 'approve', 'agent', TxParts(T.ApproveBody), T.TransactionView),
  deny: effect('transactions', 'deny', 'agent', TxParts(T.DenyBody), T.TransactionView),
  /** The purchases of the account's agents (owner agent), newest first; one of them with its negotiation and dispute. */
  listAccountTransactions: operation('transactions', 'listAccountTransactions', 'agent', parts(I.AccountPath, T.AccountTransactionsQuery, Type.Any()), Type.Array(T.TransactionView)),
  getAccountTransaction: operation('transactions', 'getAccountTransaction', 'agent', parts(T.AccountTransactionPath, Empty, Type.Any()), T.TransactionDetailView),
  spending: operation('transactions', 'spending', 'agent', parts(I.AccountPath, T.SpendingQuery, Type.Any()), T.SpendingView),
  /** Operator (D15.3): volume, fees, money held and purchases per hour. */
  figures: operation('transactions', 'figures', 'admin', parts(Empty, T.FiguresQuery, Type.Any()), T.FiguresView),
  /** D10.3: the purchases of the account's agents that needed an approval (owner agent). */
  listApprovals: operation('transactions', 'listApprovals', 'agent', parts(I.AccountPath, T.ListApprovalsQuery, Type.Any()), Type.Array(T.TransactionView)),
  openDispute: effect('transactions', 'openDispute', 'agent', TxParts(T.OpenDisputeBody), T.DisputeView),
  getTransactionDispute: operation('transactions', 'getTransactionDispute', 'agent', TxParts(Type.Any()), T.DisputeView),
  getDispute: operation('transactions', 'getDispute', 'agent', parts(T.DisputePath, Empty, Type.Any()), T.DisputeView),
  respondDispute: effect('transactions', 'respondDispute', 'agent', parts(T.DisputePath, Empty, T.RespondDisputeBody), T.DisputeView),
  decideDispute: effect('transactions', 'decideDispute', 'agent', parts(T.DisputePath, Empty, T.DecideDisputeBody), T.DisputeView),
  withdrawDispute: effect('transactions', 'withdrawDispute', 'agent', parts(T.DisputePath, Empty, T.WithdrawDisputeBody), T.DisputeView),
  /** Operator (D12.6, D15.3): any outcome for any unresolved dispute. */
  resolveDispute: effect('transactions', 'resolveDispute', 'admin', parts(T.DisputePath, Empty, T.ResolveDisputeBody), T.DisputeView),
  /** Operator (D15.3): disputes by status, the oldest deadline first — `escalated` ones wait for the operator. */
  listDisputes: operation('transactions', 'listDisputes', 'admin', parts(Empty, T.ListDisputesQuery, Type.Any()), Type.Array(T.DisputeView)),
  /** D17.4–D17.6: prepaid sessions. */
  openSession: effect('transactions', 'openSession', 'agent', parts(Empty, Empty, S.OpenSessionBody), S.SessionView),
  /** The sessions of the account's agents, as buyers (or, with `role: provider`, as sellers), for its owner agent. */
  listAccountSessions: operation('transactions', 'listAccountSessions', 'agent', parts(I.AccountPath, S.ListSessionsQuery, Type.Any()), Type.Array(S.SessionView)),
  getSession: operation('transactions', 'getSession', 'agent', parts(S.SessionPath, Empty, Type.Any()), S.SessionView),
  listSessions: operation('transactions', 'listSessions', 'agent', parts(Empty, S.ListSessionsQuery, Type.Any()), Type.Array(S.SessionView)),
  closeSession: effect('transactions', 'closeSession', 'agent', parts(S.SessionPath, Empty, S.CloseSessionBody), S.SessionView),
  approveSession: effect('transactions', 'approveSession', 'agent', parts(S.SessionPath, Empty, T.ApproveBody), S.SessionView),
  denySession: effect('transactions', 'denySession', 'agent', parts(S.SessionPath, Empty, T.DenyBody), S.SessionView),
  /** D18.3: an ended purchase's receipt (parties only). */
  getReceipt: operation('transactions', 'getReceipt', 'agent', TxParts(Type.Any()), R.ReceiptView),
  /** D18.1 (public): the exchange's receipt keys, current and retired. */
  receiptKeys: operation('transactions', 'receiptKeys', 'none', parts(Empty, Empty, Type.Any()), R.ReceiptKeysView),
  /** D18.1 (public): the exchange's DID document, listing the same keys. */
  exchangeDidDocument: operation('transactions', 'exchangeDidDocument', 'none', parts(Empty, Empty, Type.Any()), R.ExchangeDidDocument),
  /** D18.4 (operator): a new receipt key signs from now on; the retired ones keep verifying. */
  rotateReceiptKey: effect('transactions', 'rotateReceiptKey', 'admin', parts(Empty, Empty, Type.Any()), R.ReceiptKeysView),
  /** D19.2 (public): the facilitator's kinds — `aex-escrow` on `aex:{domain}`, x402 version 2. */
  x402Supported: operation('transactions', 'x402Supported', 'none', parts(Empty, Empty, Type.Any()), X.X402SupportedResponse),
  /** D19.2: the `payTo` agent verifies a payment: checked, and its price held. */
  x402Verify: effect('transactions', 'x402Verify', 'agent', parts(Empty, Empty, X.X402FacilitatorBody), X.X402VerifyResponse),
  /** D19.2: the `payTo` agent settles a verified payment: the hold captured, the transaction settled. */
  x402Settle: effect('transactions', 'x402Settle', 'agent', parts(Empty, Empty, X.X402FacilitatorBody), X.X402SettleResponse),
  /** D21.1 (internal, no route): the gateway's agent cards signed with the current receipt key. */
  signAgentCard: operation('transactions', 'signAgentCard', 'none', parts(Empty, Empty, R.SignAgentCardBody), R.AgentCardSignaturesView),
};

export type OpInput<O extends Operation> = Static<O['input']>;
export type OpOutput<O extends Operation> = Static<O['output']>;

/**
 * D5: the `Idempotency-Key` of a request, as the gateway forwards it to the owning service, which
 * records it with the effect (D5.5). `scope` is the authenticated agent, or for an unauthenticated
 * route the route and client IP; `fingerprint` is the SHA-256 of method, target and body (D5.2).
 */
export interface IdempotencyContext {
  key: string;
  scope: string;
  fingerprint: string;
  /**
   * The first copy of a write under a key the gateway made: its effect records the key itself, with no
   * claim taken before (docs/idempotency.md "Operation keys"); a repeat is sent without it.
   */
  firstCopy?: true;
}

/** What travels over NATS for one RPC. */
/** D14.2 (EXT) and D15.3: the webhook dispatcher's routes; the agent itself or its owner agent, or the operator. */
export const webhooksOps = {
  getWebhook: operation('webhooks', 'getWebhook', 'agent', parts(H.WebhookAgentPath, Empty, Type.Any()), H.WebhookView),
  rotateWebhookSecret: effect('webhooks', 'rotateWebhookSecret', 'agent', parts(H.WebhookAgentPath, Empty, Type.Any()), H.WebhookView),
  listDeliveries: operation('webhooks', 'listDeliveries', 'agent', parts(H.WebhookAgentPath, H.ListDeliveriesQuery, Type.Any()), Type.Array(H.WebhookDeliveryView)),
  retryDelivery: effect('webhooks', 'retryDelivery', 'agent', parts(H.WebhookDeliveryPath, Empty, Type.Any()), H.WebhookDeliveryView),
  testWebhook: effect('webhooks', 'testWebhook', 'agent', parts(H.WebhookAgentPath, Empty, Type.Any()), H.WebhookTestView),
  listDeadLetters: operation('webhooks', 'listDeadLetters', 'admin', parts(Empty, H.DeadLettersQuery, Type.Any()), Type.Array(H.WebhookDeliveryView)),
  retryDeadLetter: effect('webhooks', 'retryDeadLetter', 'admin', parts(H.WebhookIdPath, Empty, Type.Any()), H.WebhookDeliveryView),
};

/**
 * A signed request's signature as the gateway verified it (a receipt records a delivery's, D18.2,
 * D20.3): `x-ae` — the X-AE-Signature and its timestamp (D3); `rfc9421` — the `Signature` header's
 * value, the `created` time as ISO 8601, and the `Signature-Input` value (D20).
 */
export interface RequestSignature {
  scheme: 'x-ae' | 'rfc9421';
  signature: string;
  timestamp: string;
  input?: string;
}

export interface RpcRequest<In = unknown> {
  /** `signed`: the gateway verified a signature by the principal's current signing key (D3, D20). */
  ctx: { requestId: string; principal: Principal | null; admin?: boolean; signed?: boolean; signature?: RequestSignature; idempotency?: IdempotencyContext };
  input: In;
}

/**
 * `meta` pins the envelope's request id and timestamp when the answer is stored under an
 * Idempotency-Key, so that the first answer and every replay are the same bytes (D5.3); `replayed`
 * marks a stored answer given again.
 */
interface ReplyMeta {
  meta?: { requestId: string; timestamp: string };
  replayed?: boolean;
}

export type RpcReply<Out = unknown> =
  | ({ ok: true; status: number; data: Out; pagination?: PaginationInfo } & ReplyMeta)
  | ({ ok: false; status: number; errors: ErrorEntry[] } & ReplyMeta);
