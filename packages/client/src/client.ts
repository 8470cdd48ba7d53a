import type {
  ListSessionsQuery,
  OpenSessionBody,
  SessionView,
  ReceiptKeysView,
  ReceiptView,
  AccountView,
  CreateAccountBody,
  CreateAgentBody,
  CreateServiceBody,
  DiscoverBody,
  DiscoverView,
  ListServicesQuery,
  ServiceListItem,
  ServiceView,
  UpdateServiceBody,
  DelegationRules,
  DelegationPatch, DelegationPatchView, DelegationInForceView,
  DidDocument,
  FullAgentView,
  TrustView,
  DisputeView,
  OpenDisputeBody,
  RespondDisputeBody,
  DecideDisputeBody,
  ResolveDisputeBody,
  OperatorActionView,
  FundView,
  LedgerCheckView,
  LedgerEntryView,
  NewAccountView,
  NewAgentView,
  SpawnAgentBody,
  SpawnedAgentView,
  ProtocolView,
  PublicAgentView,
  RotatedKeyView,
  UpdateAccountBody,
  UpdateAgentBody,
  WalletView,
  WithdrawView,
  FundingView,
  PayoutLinkView,
  PayoutView,
  ReconciliationView,
  CreateTransactionBody,
  DeliverBody,
  ListTransactionsQuery,
  ListApprovalsQuery,
  AccountTransactionsQuery,
  TransactionDetailView,
  SpendingView,
  FiguresView,
  NegotiateBody,
  NegotiationView,
  TransactionView,
  ListDeliveriesQuery,
  WebhookDeliveryView,
  WebhookTestView,
  WebhookView,
} from '@aex/contracts';
import { checkDeliverBody } from './deliver-body.js';
import type { ClientOptions, RequestOptions } from './options.js';
import { ExchangeError, type Outcome } from './outcome.js';
import { isEnvelope, queryString } from './request-parts.js';
import { RequestSigner } from './request-signer.js';
import type { FromSchema } from './schema-types.js';
import { publicKeyOf, signingKeyProof, signRequest } from './signing.js';
import { serviceHandle, type ServiceContract, type ServiceHandle } from './typed-service.js';

export { ExchangeError, unwrap, type Failure, type Outcome, type Success } from './outcome.js';

export type { ClientOptions, RequestOptions } from './options.js';

type LedgerQuery = { limit?: number; offset?: number };
/** D5: every call that changes something takes an Idempotency-Key. */
type Keyed = Pick<RequestOptions, 'idempotencyKey'>;

/**
 * Typed client of the exchange gateway for agents: authentication, D3 request signing,
 * envelope unwrapping and errors as values.
 */
export class ExchangeClient {
  private readonly opts: ClientOptions;

  /** Signs requests in the configured scheme (D3 or D20). */
  private readonly signer: RequestSigner;

  constructor(opts: ClientOptions) {
    this.opts = { ...opts, baseUrl: opts.baseUrl.replace(/\/+$/, '') };
    this.signer = new RequestSigner(this.opts, (agentId) => this.didOf(agentId));
  }

  /** A client for the same exchange acting as another agent (or with other credentials). */
  as(credentials: Pick<ClientOptions, 'apiKey' | 'signingSecretKey' | 'adminToken' | 'signatureScheme' | 'signingKeyId' | 'agentId'>): ExchangeClient {
    return new ExchangeClient({ ...this.opts, apiKey: undefined, signingSecretKey: undefined, adminToken: undefined, signingKeyId: undefined, agentId: undefined, ...credentials });
  }

  get apiKey(): string | undefined {
    return this.opts.apiKey;
  }

  // --- protocol (D15.1)
  protocol = () => this.request<ProtocolView>('GET', '/v1/protocol');

  // --- accounts (D6.1–D6.3)
  createAccount = (body: CreateAccountBody, o: Keyed = {}) =>
    this.request<NewAccountView>('POST', '/v1/accounts', { body, ...o });
  getAccount = (accountId: string) => this.request<AccountView>('GET', `/v1/accounts/${enc(accountId)}`);
  updateAccount = (accountId: string, body: UpdateAccountBody, o: Keyed = {}) => this.request<AccountView>('PATCH', `/v1/accounts/${enc(accountId)}`, { body, ...o });
  /** Replaces the account's default rules: a rule not in `body` is removed (`patchAccountDelegation` changes some). */
  setAccountDelegation = (accountId: string, body: DelegationRules, o: Keyed = {}) =>
    this.request<DelegationRules>('PUT', `/v1/accounts/${enc(accountId)}/delegation`, { body, ...o });
  /** D23.3: changes only the default rules named (`null` removes one); answers the rules after and what changed. */
  patchAccountDelegation = (accountId: string, patch: DelegationPatch, o: Keyed = {}) =>
    this.request<DelegationPatchView>('PATCH', `/v1/accounts/${enc(accountId)}/delegation`, { body: patch, ...o });

  // --- agents (D6.4–D6.7)
  createAgent = (body: CreateAgentBody, o: Keyed = {}) => this.request<NewAgentView>('POST', '/v1/agents', { body, ...o });
  getTrust = (agentId: string) => this.request<TrustView>('GET', `/v1/agents/${enc(agentId)}/trust`);
  getAgent = (agentId: string) => this.request<FullAgentView | PublicAgentView>('GET', `/v1/agents/${enc(agentId)}`);
  updateAgent = (agentId: string, body: UpdateAgentBody, o: Keyed = {}) => this.request<FullAgentView>('PATCH', `/v1/agents/${enc(agentId)}`, { body, ...o });
  deactivateAgent = (agentId: string, o: Keyed = {}) => this.request<FullAgentView>('DELETE', `/v1/agents/${enc(agentId)}`, o);
  /** D10.1, D6.8: the agent's own rules and the rules in force, which its purchases are checked against (its account's agents). */
  getAgentDelegation = (agentId: string) => this.request<DelegationInForceView>('GET', `/v1/agents/${enc(agentId)}/delegation`);
  /** Replaces the agent's own rules: a rule not in `body` is removed (`patchAgentDelegation` changes some). */
  setAgentDelegation = (agentId: string, body: DelegationRules, o: Keyed = {}) => this.request<DelegationRules>('PUT', `/v1/agents/${enc(agentId)}/delegation`, { body, ...o });
  /** D23.3: changes only the agent's rules named (`null` removes one); answers the rules after and what changed. */
  patchAgentDelegation = (agentId: string, patch: DelegationPatch, o: Keyed = {}) =>
    this.request<DelegationPatchView>('PATCH', `/v1/agents/${enc(agentId)}/delegation`, { body: patch, ...o });
  /**
   * D23.4: a one-time link (two minutes) that signs the owner agent in to the web console, for a
   * person to open in a browser; the key itself is never in it. Owner agent only.
   */
  consoleSignInLink = () => this.request<{ url: string; expiresAt: string }>('POST', '/console/api/sign-in-links', { body: {} });
  /** D6.8: a child agent with `budgetCents` moved from the parent's wallet; 402 when the parent is short. */
  spawnAgent = (agentId: string, body: SpawnAgentBody, o: Keyed = {}) => this.request<SpawnedAgentView>('POST', `/v1/agents/${enc(agentId)}/spawn`, { body, ...o });
  /**
   * Registers this client's signing key (`signingSecretKey`) as the agent's `signingKeyPublic`, with
   * a proof that the client holds it (D3.5). The registration itself is sent unsigned, since the
   * exchange cannot know the new key yet — or signed by `previousSecretKey`, the key it replaces,
   * which an exchange set to `SIGNING_KEY_REPLACEMENT=signed` asks of an agent replacing its own key.
   * Every later call of this client is signed with the new key.
   */
  registerSigningKey = async (agentId: string, o: Keyed & { previousSecretKey?: string } = {}): Promise<Outcome<FullAgentView>> => {
    const secretKey = this.opts.signingSecretKey;
    if (!secretKey) throw new Error('registerSigningKey needs a client made with a signingSecretKey');
    const agent = await this.request<FullAgentView | PublicAgentView>('GET', `/v1/agents/${enc(agentId)}`, { sign: false });
    if (!agent.ok) return agent;
    if (!('accountId' in agent.data)) return { ok: false, status: 403, headers: agent.headers, error: new ExchangeError(403, [{ code: 'FORBIDDEN', message: 'Only an agent of your own account can be given a signing key.' }], agent.requestId) };
    const body = { signingKeyPublic: publicKeyOf(secretKey), signingKeyProof: signingKeyProof(secretKey, agent.data.accountId) };
    const path = `/v1/agents/${enc(agentId)}`;
    const headers = o.previousSecretKey ? signRequest(o.previousSecretKey, { method: 'PATCH', target: path, body: JSON.stringify(body) }) : undefined;
    const registered = await this.request<FullAgentView>('PATCH', path, { body, sign: false, ...(headers ? { headers } : {}), ...(o.idempotencyKey ? { idempotencyKey: o.idempotencyKey } : {}) });
    this.signer.forgetKeyId();
    return registered;
  };
  rotateKey = (agentId: string, o: Keyed = {}) =>
    this.request<RotatedKeyView>('POST', `/v1/agents/${enc(agentId)}/keys/rotate`, o);
  didDocument = (agentId: string) => this.request<DidDocument>('GET', `/v1/agents/${enc(agentId)}/did.json`);
  /** The raw document a did:web resolver fetches (no envelope). */
  resolveDid = (agentId: string) => this.request<DidDocument>('GET', `/agents/${enc(agentId)}/did.json`, { raw: true });

  // --- services (D7) and discovery (D8)
  createService = (body: CreateServiceBody, o: Keyed = {}) => this.request<ServiceView>('POST', '/v1/services', { body, ...o });
  getService = (serviceId: string) => this.request<ServiceView>('GET', `/v1/services/${enc(serviceId)}`);
  updateService = (serviceId: string, body: UpdateServiceBody, o: Keyed = {}) => this.request<ServiceView>('PATCH', `/v1/services/${enc(serviceId)}`, { body, ...o });
  deleteService = (serviceId: string, o: Keyed = {}) => this.request<ServiceView>('DELETE', `/v1/services/${enc(serviceId)}`, o);
  listServices = (query: ListServicesQuery = {}) => this.request<ServiceListItem[]>('GET', '/v1/services', { query });
  discover = (body: DiscoverBody, o: Keyed = {}) => this.request<DiscoverView>('POST', '/v1/services/discover', { body, ...o });

  /**
   * One service through its contract (D23.5): `buy`, `transaction`, `waitForDelivery` and `deliver` typed by its input and output,
   * given as `service<Input, Output>(id)` or derived from schemas written `as const`: `service(id, { inputSchema, outputSchema })`.
   */
  service<Input = Record<string, unknown>, Output = Record<string, unknown>>(serviceId: string): ServiceHandle<Input, Output>;
  service<const C extends ServiceContract>(serviceId: string, contract: C): ServiceHandle<FromSchema<C['inputSchema']>, FromSchema<C['outputSchema']>>;
  service(serviceId: string): ServiceHandle<unknown, unknown> { return serviceHandle(this, serviceId); }

  // --- transactions (D9) and negotiation (D11); create and deliver are signed (D3.3)
  /** Buys (signed). Give `queryId`, the discover's answer's, when the service was found by one: discovery learns from how it ends (D22.2). */
  createTransaction = (body: CreateTransactionBody, o: Keyed = {}) => this.request<TransactionView>('POST', '/v1/transactions', { body, ...o });
  getTransaction = (transactionId: string) => this.request<TransactionView>('GET', `/v1/transactions/${enc(transactionId)}`);
  listTransactions = (query: ListTransactionsQuery = {}) => this.request<TransactionView[]>('GET', '/v1/transactions', { query });
  negotiate = (transactionId: string, body: NegotiateBody, o: Keyed = {}) =>
    this.request<TransactionView>('POST', `/v1/transactions/${enc(transactionId)}/negotiate`, { body, ...o });
  negotiations = (transactionId: string) => this.request<NegotiationView[]>('GET', `/v1/transactions/${enc(transactionId)}/negotiations`);
  startWork = (transactionId: string, o: Keyed = {}) => this.request<TransactionView>('POST', `/v1/transactions/${enc(transactionId)}/start`, { body: {}, ...o });
  /**
   * Delivers (signed) the body of `POST /v1/transactions/{id}/deliver` (D23.5): `{ output }`, with `usage: { units }` for a metered
   * purchase (D17.2). Another shape rejects with a `TypeError` before any request: a refused output uses up a delivery attempt.
   */
  deliver = async (transactionId: string, body: DeliverBody, o: Keyed = {}) => {
    checkDeliverBody(body, o);
    return this.request<TransactionView>('POST', `/v1/transactions/${enc(transactionId)}/deliver`, { body, ...o });
  };
  verify = (transactionId: string, body: { qualityScore?: number; notes?: string } = {}, o: Keyed = {}) =>
    this.request<TransactionView>('POST', `/v1/transactions/${enc(transactionId)}/verify`, { body, ...o });
  openDispute = (transactionId: string, body: OpenDisputeBody, o: Keyed = {}) => this.request<DisputeView>('POST', `/v1/transactions/${enc(transactionId)}/dispute`, { body, ...o });
  transactionDispute = (transactionId: string) => this.request<DisputeView>('GET', `/v1/transactions/${enc(transactionId)}/dispute`);
  getDispute = (disputeId: string) => this.request<DisputeView>('GET', `/v1/disputes/${enc(disputeId)}`);
  respondDispute = (disputeId: string, body: RespondDisputeBody, o: Keyed = {}) => this.request<DisputeView>('POST', `/v1/disputes/${enc(disputeId)}/respond`, { body, ...o });
  decideDispute = (disputeId: string, body: DecideDisputeBody, o: Keyed = {}) => this.request<DisputeView>('POST', `/v1/disputes/${enc(disputeId)}/decide`, { body, ...o });
  withdrawDispute = (disputeId: string, body: { message?: string } = {}, o: Keyed = {}) => this.request<DisputeView>('POST', `/v1/disputes/${enc(disputeId)}/withdraw`, { body, ...o });
  /** Operator (D15.3): disputes by status, the oldest deadline first. */
  listDisputes = (query: { status?: DisputeView['status']; limit?: number; offset?: number } = {}) => this.request<DisputeView[]>('GET', '/admin/v1/disputes', { query });
  resolveDispute = (disputeId: string, body: ResolveDisputeBody, o: Keyed = {}) => this.request<DisputeView>('POST', `/admin/v1/disputes/${enc(disputeId)}/resolve`, { body, ...o });
  cancel = (transactionId: string, o: Keyed = {}) => this.request<TransactionView>('POST', `/v1/transactions/${enc(transactionId)}/cancel`, { body: {}, ...o });

  /** The account's agents in full (any agent of the account), the owner agent first. */
  listAccountAgents = (accountId: string, query: { limit?: number; offset?: number } = {}) =>
    this.request<FullAgentView[]>('GET', `/v1/accounts/${enc(accountId)}/agents`, { query });

  // --- the account's purchases, for its owner agent
  listAccountTransactions = (accountId: string, query: AccountTransactionsQuery = {}) =>
    this.request<TransactionView[]>('GET', `/v1/accounts/${enc(accountId)}/transactions`, { query });
  getAccountTransaction = (accountId: string, transactionId: string) =>
    this.request<TransactionDetailView>('GET', `/v1/accounts/${enc(accountId)}/transactions/${enc(transactionId)}`);

  /** What the account's agents spent in the last `days` days, by category (owner agent). */
  spending = (accountId: string, query: { days?: number; agentId?: string } = {}) => this.request<SpendingView>('GET', `/v1/accounts/${enc(accountId)}/spending`, { query });
  /** Operator: money held; purchases, volume settled and fees per hour of the last `hours` hours. */
  figures = (query: { hours?: number } = {}) => this.request<FiguresView>('GET', '/admin/v1/figures', { query });

  // --- approvals (D10.3): the consumer's account owner agent decides what its rules do not approve
  /** The account's purchases awaiting approval (`state: 'pending'`, the default), decided, or all; newest first. */
  listApprovals = (accountId: string, query: ListApprovalsQuery = {}) =>
    this.request<TransactionView[]>('GET', `/v1/accounts/${enc(accountId)}/approvals`, { query });
  /** Approve: the price is held (`funds_held`); 402 leaves it awaiting approval. */
  approve = (transactionId: string, o: Keyed = {}) => this.request<TransactionView>('POST', `/v1/transactions/${enc(transactionId)}/approve`, { body: {}, ...o });
  /** Deny: cancelled with `approval_denied`; the reason is kept with the approval. */
  deny = (transactionId: string, body: { reason?: string } = {}, o: Keyed = {}) =>
    this.request<TransactionView>('POST', `/v1/transactions/${enc(transactionId)}/deny`, { body, ...o });

  // --- wallets (D13)
  getWallet = (agentId: string) => this.request<WalletView>('GET', `/v1/wallets/${enc(agentId)}`);
  fund = (agentId: string, amountCents: number, o: Keyed = {}) =>
    this.request<FundView>('POST', `/v1/wallets/${enc(agentId)}/fund`, {
      body: { amountCents },
      ...o,
    });
  withdraw = (agentId: string, amountCents: number, o: Keyed = {}) =>
    this.request<WithdrawView>('POST', `/v1/wallets/${enc(agentId)}/withdraw`, {
      body: { amountCents },
      ...o,
    });
  ledger = (agentId: string, query: LedgerQuery = {}) =>
    this.request<LedgerEntryView[]>('GET', `/v1/wallets/${enc(agentId)}/transactions`, { query });
  /** The wallet's funding sessions, newest first: pending, paid (credited once) or expired. */
  fundings = (agentId: string, query: LedgerQuery = {}) =>
    this.request<FundingView[]>('GET', `/v1/wallets/${enc(agentId)}/fundings`, { query });
  /** The wallet's payouts, newest first, with the processor's ids. */
  payouts = (agentId: string, query: LedgerQuery = {}) =>
    this.request<PayoutView[]>('GET', `/v1/wallets/${enc(agentId)}/payouts`, { query });
  /** D13.7 (owner agent): Stripe's onboarding page for the connected account the account's payouts go to. */
  linkPayoutAccount = (accountId: string, o: Keyed = {}) =>
    this.request<PayoutLinkView>('POST', `/v1/accounts/${enc(accountId)}/payouts/link`, o);

  // --- webhooks (D14.2, EXT): the agent itself or its owner agent
  getWebhook = (agentId: string) => this.request<WebhookView>('GET', `/v1/agents/${enc(agentId)}/webhook`);
  rotateWebhookSecret = (agentId: string, o: Keyed = {}) => this.request<WebhookView>('POST', `/v1/agents/${enc(agentId)}/webhook/secret/rotate`, o);
  webhookDeliveries = (agentId: string, query: ListDeliveriesQuery = {}) => this.request<WebhookDeliveryView[]>('GET', `/v1/agents/${enc(agentId)}/webhook/deliveries`, { query });
  retryWebhookDelivery = (agentId: string, webhookId: string, o: Keyed = {}) =>
    this.request<WebhookDeliveryView>('POST', `/v1/agents/${enc(agentId)}/webhook/deliveries/${enc(webhookId)}/retry`, o);
  testWebhook = (agentId: string, o: Keyed = {}) => this.request<WebhookTestView>('POST', `/v1/agents/${enc(agentId)}/webhook/test`, o);

  // --- prepaid sessions (D17.4–D17.7): one hold of a budget, many calls reserved from it
  /** Opens a session (signed): its budget is held once; 201 `open`, or 202 while held or awaiting the owner's approval. */
  openSession = (body: OpenSessionBody, o: Keyed = {}) => this.request<SessionView>('POST', '/v1/sessions', { body, ...o });
  /** A call in an open session (signed): its price reserved from the budget, `funds_held` at once; 402 with `remainingCents` when the budget is short. */
  callInSession = (sessionId: string, input: Record<string, unknown>, o: Keyed & { maxUnits?: number; units?: number; metadata?: Record<string, unknown>; queryId?: string } = {}) => {
    const { idempotencyKey, ...rest } = o;
    return this.request<TransactionView>('POST', '/v1/transactions', { body: { sessionId, input, ...rest }, ...(idempotencyKey ? { idempotencyKey } : {}) });
  };
  getSession = (sessionId: string) => this.request<SessionView>('GET', `/v1/sessions/${enc(sessionId)}`);
  listSessions = (query: ListSessionsQuery = {}) => this.request<SessionView[]>('GET', '/v1/sessions', { query });
  /** No new calls; the unspent budget is returned once every call has ended (either party). */
  closeSession = (sessionId: string, o: Keyed = {}) => this.request<SessionView>('POST', `/v1/sessions/${enc(sessionId)}/close`, { body: {}, ...o });
  approveSession = (sessionId: string, o: Keyed = {}) => this.request<SessionView>('POST', `/v1/sessions/${enc(sessionId)}/approve`, { body: {}, ...o });
  denySession = (sessionId: string, reason?: string, o: Keyed = {}) => this.request<SessionView>('POST', `/v1/sessions/${enc(sessionId)}/deny`, { body: reason ? { reason } : {}, ...o });

  // --- receipts (D18)
  /** The signed receipt of an ended purchase (parties only): the compact JWS and its claims; check it with `verifyReceipt`. */
  receipt = (transactionId: string) => this.request<ReceiptView>('GET', `/v1/transactions/${enc(transactionId)}/receipt`);
  /** The exchange's receipt keys as a JWK set (public; current and retired), for `verifyReceipt` offline. */
  receiptKeys = async (): Promise<ReceiptKeysView> => {
    const res = await (this.opts.fetch ?? fetch)(`${this.opts.baseUrl}/.well-known/jwks.json`, { signal: AbortSignal.timeout(this.opts.timeoutMs ?? 30_000) });
    if (!res.ok) throw new Error(`The exchange answered ${res.status} for its JWK set`);
    return (await res.json()) as ReceiptKeysView;
  };
  /** Operator (D18.4): a new receipt key signs from now on; receipts of the retired ones keep verifying. */
  rotateReceiptKey = (o: Keyed = {}) => this.request<ReceiptKeysView>('POST', '/admin/v1/receipt-keys/rotate', o);

  // --- operator (D15.3)
  webhookDeadLetters = (query: { limit?: number; offset?: number } = {}) => this.request<WebhookDeliveryView[]>('GET', '/admin/v1/webhooks/dead-letters', { query });
  retryDeadLetter = (webhookId: string, o: Keyed = {}) => this.request<WebhookDeliveryView>('POST', `/admin/v1/webhooks/dead-letters/${enc(webhookId)}/retry`, o);
  checkLedger = () => this.request<LedgerCheckView>('GET', '/admin/v1/ledger/check');
  /** D13.7: what the payment processor says was paid in and out in [from, to), against the ledger. */
  reconcilePayments = (query: { from: string; to: string }) => this.request<ReconciliationView>('GET', '/admin/v1/payments/reconciliation', { query });
  operatorActions = (query: { limit?: number; offset?: number } = {}) => this.request<OperatorActionView[]>('GET', '/admin/v1/audit', { query });
  suspendAgent = (agentId: string, o: Keyed = {}) => this.request<FullAgentView>('POST', `/admin/v1/agents/${enc(agentId)}/suspend`, o);

  /**
   * Any route: builds the target, authenticates, signs, sends, and unwraps the D1 envelope. A write
   * whose outcome the exchange could not learn in time (`202`, `details.outcome: "unknown"`) is
   * repeated with the key the answer gives — the client's own, or the one the gateway made — after its
   * `Retry-After`, as long as the repeat is still in flight (`409 IDEMPOTENCY_KEY_IN_USE`), up to
   * `outcomeRepeats` times: the repeat gets the first outcome or runs the request, never twice.
   */
  async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<Outcome<T>> {
    let outcome = await this.requestOnce<T>(method, path, o);
    // A key replaced elsewhere has a new id: an rfc9421 client reads it again after a refusal.
    if (!outcome.ok && outcome.status === 401) this.signer.forgetKeyId();
    const key = !outcome.ok && outcome.status === 202 ? outcome.headers?.get('idempotency-key') : null;
    if (!key) return outcome;
    for (let n = 0; n < (this.opts.outcomeRepeats ?? 5); n++) {
      const wait = Number(outcome.headers?.get('retry-after') ?? '1');
      await new Promise((r) => setTimeout(r, 1000 * (Number.isFinite(wait) && wait > 0 ? wait : 1)));
      outcome = await this.requestOnce<T>(method, path, { ...o, idempotencyKey: key });
      const unknown = !outcome.ok && (outcome.status === 202 || outcome.error.errors.some((e) => e.code === 'IDEMPOTENCY_KEY_IN_USE'));
      if (!unknown) return outcome;
    }
    return outcome;
  }

  /** An agent's DID document, for the signer's key id (unsigned: the signer needs it to sign). */
  private async didOf(agentId: string): Promise<DidDocument> {
    const doc = await this.requestOnce<DidDocument>('GET', `/v1/agents/${enc(agentId)}/did.json`, { sign: false });
    if (!doc.ok) throw new Error(`could not read the signing key id of agent ${agentId} from its DID document (${doc.error.message})`);
    return doc.data;
  }

  private async requestOnce<T>(method: string, path: string, o: RequestOptions): Promise<Outcome<T>> {
    const target = path + queryString(o.query);
    const body = o.body === undefined ? undefined : JSON.stringify(o.body);
    const headers: Record<string, string> = { accept: 'application/json', ...o.headers };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (o.idempotencyKey) headers['idempotency-key'] = o.idempotencyKey;
    if (path.startsWith('/admin/')) {
      if (this.opts.adminToken) headers.authorization = `Bearer ${this.opts.adminToken}`;
    } else if (this.opts.apiKey) {
      headers.authorization = `Bearer ${this.opts.apiKey}`;
      if (this.opts.signingSecretKey && o.sign !== false) Object.assign(headers, await this.signer.headers(method, target, body));
    }
    if (o.sign === true && !this.opts.signingSecretKey) throw new Error('sign: true needs a signingSecretKey');

    const doFetch = this.opts.fetch ?? fetch;
    let res: Response;
    try {
      res = await doFetch(this.opts.baseUrl + target, { method, headers, body, signal: AbortSignal.timeout(this.opts.timeoutMs ?? 30_000) });
    } catch (err) {
      const message = `Could not reach the exchange: ${(err as Error).message}`;
      return { ok: false, status: 0, headers: null, error: new ExchangeError(0, [], null, { code: 'NETWORK_ERROR', message }) };
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      const message = `The exchange answered ${res.status} with a body that is not JSON.`;
      return { ok: false, status: res.status, headers: res.headers, error: new ExchangeError(res.status, [], null, { code: 'INVALID_RESPONSE', message }) };
    }
    if (o.raw && res.ok) return { ok: true, status: res.status, data: json as T, requestId: res.headers.get('x-request-id') ?? '', headers: res.headers };
    if (!isEnvelope(json)) {
      const message = `The exchange answered ${res.status} without the response envelope.`;
      return { ok: false, status: res.status, headers: res.headers, error: new ExchangeError(res.status, [], null, { code: 'INVALID_RESPONSE', message }) };
    }
    if (!res.ok || (json.errors && json.errors.length > 0)) {
      return { ok: false, status: res.status, headers: res.headers, error: new ExchangeError(res.status, json.errors ?? [], json.meta.requestId) };
    }
    return { ok: true, status: res.status, data: json.data as T, pagination: json.pagination, requestId: json.meta.requestId, headers: res.headers };
  }
}

const enc = encodeURIComponent;
