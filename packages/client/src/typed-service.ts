import type { CreateTransactionBody, ServiceView, TransactionView, Usage } from '@aex/contracts';
import type { Static } from '@sinclair/typebox';
import type { ExchangeClient } from './client.js';
import type { RequestOptions } from './options.js';
import { waitForDelivery, type WaitForDeliveryOptions } from './delivery.js';
import type { ExchangeError, Outcome } from './outcome.js';

/** A purchase of a service whose contract is known: its `input` and `output` typed (D23.5). */
export type TypedTransaction<Input, Output> = Omit<TransactionView, 'input' | 'output'> & { input: Input; output: Output | null };

/** The body of a delivery of such a service: `POST /v1/transactions/{id}/deliver`, its output typed. */
export interface TypedDeliverBody<Output> {
  output: Output;
  /** A metered purchase (bought with `maxUnits`): the units used, signed with the delivery (D17.2). */
  usage?: Static<typeof Usage>;
}

export type TypedDeliveryWait<Input, Output> =
  | { outcome: 'delivered' | 'ended' | 'timeout'; transaction: TypedTransaction<Input, Output> }
  | { outcome: 'error'; error: ExchangeError };

/** What a schema-typed handle needs of a service: its two schemas (a `ServiceView` has them). */
export interface ServiceContract {
  readonly inputSchema: unknown;
  readonly outputSchema: unknown;
}

type Keyed = Pick<RequestOptions, 'idempotencyKey'>;

/**
 * One service seen through its contract (D23.5): what is bought, read, waited for and delivered is
 * typed by the service's input and output, so a wrong input or output does not compile. The types
 * are the caller's word: the exchange checks every input and output against the published schemas.
 * Use it for transactions of this service only.
 */
export interface ServiceHandle<Input, Output> {
  readonly serviceId: string;
  /** The service as published: its schemas, price and SLA. */
  contract(): Promise<Outcome<ServiceView>>;
  /** Buys (signed): `createTransaction({ serviceId, input, ...terms })`. */
  buy(input: Input, terms?: Omit<CreateTransactionBody, 'serviceId' | 'input' | 'sessionId'>, o?: Keyed): Promise<Outcome<TypedTransaction<Input, Output>>>;
  transaction(transactionId: string): Promise<Outcome<TypedTransaction<Input, Output>>>;
  /** `waitForDelivery` for a purchase of this service. */
  waitForDelivery(transactionId: string, opts: WaitForDeliveryOptions): Promise<TypedDeliveryWait<Input, Output>>;
  /** The provider delivers (signed): `deliver(transactionId, { output, usage? })`. */
  deliver(transactionId: string, body: TypedDeliverBody<Output>, o?: Keyed): Promise<Outcome<TypedTransaction<Input, Output>>>;
}

export function serviceHandle<Input, Output>(client: ExchangeClient, serviceId: string): ServiceHandle<Input, Output> {
  type Tx = TypedTransaction<Input, Output>;
  return {
    serviceId,
    contract: () => client.getService(serviceId),
    buy: (input, terms = {}, o = {}) => client.createTransaction({ ...terms, serviceId, input: input as Record<string, unknown> }, o) as Promise<Outcome<Tx>>,
    transaction: (transactionId) => client.getTransaction(transactionId) as Promise<Outcome<Tx>>,
    waitForDelivery: (transactionId, opts) => waitForDelivery(client, transactionId, opts) as Promise<TypedDeliveryWait<Input, Output>>,
    // A body of the wrong shape rejects with the client's deliver's TypeError.
    deliver: (transactionId, body, o = {}) => client.deliver(transactionId, body as { output: Record<string, unknown> }, o) as Promise<Outcome<Tx>>,
  };
}
