import { api } from './api.js';
import { state } from './session.js';

// D23.2: the names the pages show instead of ids — the account's agents (read again for each page,
// so a renamed agent shows as it is now) and the services (kept for the session: a name is not
// worth a request per row).

const services = new Map();

/** The account's agents, by id (the owner's included). */
export async function agentsById() {
  const r = await api('GET', `/v1/accounts/${state.session.accountId}/agents?limit=100`);
  const map = new Map((r.ok ? r.data : []).map((a) => [a.id, a]));
  state.agents = map;
  return map;
}

/** An agent's name as the account knows it; other accounts' agents are "another account's agent". */
export const agentName = (id) => state.agents?.get(id)?.name ?? (id ? `agent ${id.slice(0, 8)}` : '–');

/** A service (GET /v1/services/{id}), or null when it cannot be read. */
export function service(id) {
  if (!services.has(id)) services.set(id, api('GET', `/v1/services/${id}`).then((r) => (r.ok ? r.data : null)));
  return services.get(id);
}
