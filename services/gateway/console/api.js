import { go } from './navigation.js';
import { state } from './session.js';

/** One call of the exchange's API with the session: `{ ok, status, data, error }`. */
export async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && state.session) headers['x-csrf-token'] = state.session.csrfToken;
  let res;
  try {
    res = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    return { ok: false, status: 0, error: 'The exchange could not be reached.' };
  }
  const json = await res.json().catch(() => null);
  if (res.ok && json && !(json.errors && json.errors.length)) return { ok: true, status: res.status, data: json.data, pagination: json.meta && json.meta.pagination };
  const first = json && json.errors && json.errors[0];
  if (res.status === 401 && state.session) {
    state.session = null;
    go('#/signin');
  }
  return { ok: false, status: res.status, code: first && first.code, error: first ? `${first.code}: ${first.message}` : `HTTP ${res.status}` };
}
