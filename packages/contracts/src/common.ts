import { Type, type TSchema, type TProperties, type TObject } from '@sinclair/typebox';

export const Uuid = Type.String({ format: 'uuid', description: 'UUID' });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC timestamp' });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
/** A free-form object (D1.5: unknown properties allowed inside). */
export const FreeObject = Type.Record(Type.String(), Type.Unknown(), { description: 'Arbitrary key-value pairs' });
/**
 * A free-form object in a request, at most `maxBytes` as JSON (`maxJsonBytes`, validation.ts), so
 * that every resource holding it stays far below the bus's 1 MiB message limit.
 */
export const FreeObjectOf = (maxBytes: number, description = 'Arbitrary key-value pairs') =>
  Type.Record(Type.String(), Type.Unknown(), { description, maxJsonBytes: maxBytes });
/** `metadata` of accounts, agents and services: at most 16 KiB as JSON (EXT bound). */
export const Metadata = FreeObjectOf(16 * 1024, 'Arbitrary key-value pairs, at most 16 KiB as JSON');
export const Cents = Type.Integer({ description: 'Integer cents' });

/** A request object that rejects unknown properties (D1.5). */
export function Strict<T extends TProperties>(properties: T, options: object = {}): TObject<T> {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

/** An empty request part (no path parameters, no query, no body). */
export const Empty = Strict({});

/**
 * The largest value an integer filter or bound may take: Postgres `integer` (int4), the type of
 * every column such a value is compared with. Every integer of a request has a maximum (a unit test
 * walks the contracts), so no number reaches a service, or SQL, out of range.
 */
export const INT4_MAX = 2_147_483_647;

export const PageQuery = Strict({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: INT4_MAX, default: 0 })),
});

export const Pagination = Type.Object({
  total: Type.Integer({ minimum: 0 }),
  limit: Type.Integer({ minimum: 1 }),
  offset: Type.Integer({ minimum: 0 }),
  hasMore: Type.Boolean(),
});

export type Schema = TSchema;
