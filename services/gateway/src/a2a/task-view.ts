import { Role, TaskState, type Artifact, type Message, type Part, type Task } from '@a2a-js/sdk';
import type { TransactionStatus, TransactionView } from '@aex/contracts';

/**
 * D21.2: the A2A task state of each transaction status. `disputed` (after a delivery, funds still
 * held, the outcome open) is `working`: A2A's `completed` is final, and a dispute may end in a redo.
 */
export const TASK_STATE_OF: Record<TransactionStatus, TaskState> = {
  initiated: TaskState.TASK_STATE_SUBMITTED,
  negotiating: TaskState.TASK_STATE_SUBMITTED,
  matched: TaskState.TASK_STATE_SUBMITTED,
  awaiting_approval: TaskState.TASK_STATE_AUTH_REQUIRED,
  funds_held: TaskState.TASK_STATE_WORKING,
  executing: TaskState.TASK_STATE_WORKING,
  validation_failed: TaskState.TASK_STATE_WORKING,
  disputed: TaskState.TASK_STATE_WORKING,
  delivered: TaskState.TASK_STATE_COMPLETED,
  settled: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  expired: TaskState.TASK_STATE_FAILED,
  cancelled: TaskState.TASK_STATE_CANCELED,
};

/** The message part that carries JSON (A2A's `data` part). */
export const dataPart = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });
const textPart = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });

/** The context a task belongs to: the one the buying message named, kept in the transaction's metadata. */
export const A2A_METADATA_KEY = 'a2a';

export function contextIdOf(tx: TransactionView): string {
  const kept = (tx.metadata as Record<string, unknown>)[A2A_METADATA_KEY] as { contextId?: unknown } | undefined;
  return typeof kept?.contextId === 'string' ? kept.contextId : tx.id;
}

/** D21.2: the transaction as an A2A task: its id, state, the output as a data artifact once delivered. */
export function taskOf(tx: TransactionView, base: string): Task {
  const state = TASK_STATE_OF[tx.status];
  const contextId = contextIdOf(tx);
  const note = statusNote(tx, base);
  const message: Message | undefined = note === undefined ? undefined : {
    messageId: `${tx.id}:${tx.status}`, contextId, taskId: tx.id, role: Role.ROLE_AGENT, parts: [textPart(note)], metadata: undefined, extensions: [], referenceTaskIds: [],
  };
  const artifacts: Artifact[] = state === TaskState.TASK_STATE_COMPLETED && tx.output !== null
    ? [{ artifactId: 'output', name: 'output', description: 'The delivered output; it passed the service\'s outputSchema.', parts: [dataPart(tx.output)], metadata: undefined, extensions: [] }]
    : [];
  return {
    id: tx.id,
    contextId,
    status: { state, message, timestamp: tx.updatedAt },
    artifacts,
    history: [],
    metadata: {
      transactionStatus: tx.status,
      ...(tx.statusReason ? { statusReason: tx.statusReason } : {}),
      serviceId: tx.serviceId,
      agreedPriceCents: tx.agreedPriceCents,
      transactionUrl: `${base}/v1/transactions/${tx.id}`,
    },
  };
}

/** What the buyer is told beside the state, where the state alone leaves it guessing. */
function statusNote(tx: TransactionView, base: string): string | undefined {
  switch (tx.status) {
    case 'awaiting_approval':
      return `Waiting for the approval of the buyer's account owner agent (D10.3): POST ${base}/v1/transactions/${tx.id}/approve or /deny.`;
    case 'delivered':
      return `Delivered. Accept it with a message { verify: true, qualityScore? } on this task (or POST ${base}/v1/transactions/${tx.id}/verify); it settles by itself at the end of the review window.`;
    case 'disputed':
      return `Disputed: ${base}/v1/transactions/${tx.id}/dispute.`;
    case 'failed':
    case 'expired':
    case 'cancelled':
      return tx.statusReason ? `${tx.status}: ${tx.statusReason}` : tx.status;
    default:
      return undefined;
  }
}
