import { Type, type TSchema, type TProperties, type TObject } from '@sinclair/typebox';

export const Uuid = Type.String({ format: 'uuid', description: 'UUID' });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC timestamp' });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
/** A free-form object (D1.5: unknown properties allowed inside). */
export const FreeObject = Type.Record(Type.String(), Type.Unknown(), { description: 'Arbitrary key-value pairs' });
export const Cents = Type.Integer({ description: 'Integer cents' });

/** A request object that rejects unknown properties (D1.5). */
export function Strict<T extends TProperties>(properties: T, options: object = {}): TObject<T> {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

/** An empty request part (no path parameters, no query, no body). */
export const Empty = Strict({});

export const PageQuery = Strict({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
});

export const Pagination = Type.Object({
  total: Type.Integer({ minimum: 0 }),
  limit: Type.Integer({ minimum: 1 }),
  offset: Type.Integer({ minimum: 0 }),
  hasMore: Type.Boolean(),
});

export type Schema = TSchema;
