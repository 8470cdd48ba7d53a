import { Type } from '@sinclair/typebox';
import { TransactionSummary } from './summary.js';

// The parts of tool schemas several tools share.
export const Uuid = Type.String({ format: 'uuid' });
export const TxId = Type.Object({ transactionId: Uuid }, { additionalProperties: false });
export const WaitSeconds = Type.Optional(Type.Integer({ minimum: 0, maximum: 3600, description: 'How long to wait at most (seconds); the server caps it.' }));
/** A tool's answer about one transaction: its summary (D23.6) and what to do next. */
export const TxOut = Type.Object({ transaction: TransactionSummary, note: Type.String() });
