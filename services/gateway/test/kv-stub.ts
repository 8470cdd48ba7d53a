import { KvConflictError, type KvEntry, type KvStore } from '@aex/platform';

/** A KV bucket in memory: `create` refuses a key it holds, as JetStream's does; `over` replaces any call. */
export function kvOf(over: Partial<KvStore> = {}): KvStore {
  const entries = new Map<string, string>();
  const get = async (key: string) => {
    const value = entries.get(key);
    return value === undefined ? null : ({ key, value, revision: 1 } as unknown as KvEntry);
  };
  return {
    get,
    getLatest: get,
    async create(key, value) {
      if (entries.has(key)) throw new KvConflictError(key);
      entries.set(key, value);
      return 1;
    },
    update: async () => 1,
    put: async () => 1,
    delete: async () => undefined,
    keys: async () => [...entries.keys()],
    ...over,
  };
}
