import { Type } from '@sinclair/typebox';
import { TransactionView } from '@aex/contracts';

// The parts of tool schemas several tools share.
export const Uuid = Type.String({ format: 'uuid' });
export const TxId = Type.Object({ transactionId: Uuid }, { additionalProperties: false });
export const WaitSeconds = Type.Optional(Type.Integer({ minimum: 0, maximum: 3600, description: 'How long to wait at most (seconds); the server caps it.' }));
export const TxOut = Type.Object({ transaction: TransactionView, note: Type.String() });
