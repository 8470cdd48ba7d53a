import { api } from '../api.js';
import { service } from '../directory.js';
import { h, named, pill, scroller } from '../elements.js';
import { short, usd, when } from '../format.js';
import { render } from '../navigation.js';
import { state } from '../session.js';

// The prepaid sessions of the account's agents (D17.4): one budget held, many calls reserved from it.
// Each session with its money as it stands and, opened, its calls.

export async function sessionsPage() {
  const account = state.session.accountId;
  const role = sessionStorage.getItem('aex.sessions.role') === 'provider' ? 'provider' : 'consumer';
  const r = await api('GET', `/v1/accounts/${account}/sessions?limit=50&role=${role}`);
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  // D23.1: sessions carry their service's name; one not yet named is asked of the catalog.
  const names = new Map(await Promise.all([...new Set(r.data.filter((s) => !s.serviceName).map((s) => s.serviceId))].map(async (id) => [id, (await service(id))?.name ?? `service ${short(id)}`])));
  const switcher = h('p', { class: 'actions' },
    h('button', { type: 'button', class: role === 'consumer' ? '' : 'secondary', onclick: () => { sessionStorage.setItem('aex.sessions.role', 'consumer'); void render(); } }, 'Bought'),
    h('button', { type: 'button', class: role === 'provider' ? '' : 'secondary', onclick: () => { sessionStorage.setItem('aex.sessions.role', 'provider'); void render(); } }, 'Sold'));
  return h('section', {},
    h('h1', {}, 'Sessions'),
    h('p', {}, 'A session holds one budget; each call reserves its price from it and is paid when delivered. What is not spent returns when it closes.'),
    switcher,
    r.data.length === 0 ? h('p', {}, 'No sessions.') : scroller('Sessions', h('table', { id: 'sessions' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Session of'), h('th', { scope: 'col' }, 'Status'),
        ...['Budget', 'Spent', 'Reserved', 'Left', 'Returned'].map((c) => h('th', { scope: 'col', class: 'money' }, c)), h('th', { scope: 'col' }, 'Calls'), h('th', { scope: 'col' }, 'Expires'))),
      h('tbody', {}, r.data.map((s) => h('tr', { 'data-session': s.id },
        h('td', {}, h('a', { href: `#/sessions/${s.id}`, title: s.id }, s.serviceName ?? names.get(s.serviceId))), h('td', {}, pill(s.status)),
        ...[s.budgetCents, s.spentCents, s.reservedCents, s.remainingCents, s.returnedCents].map((c) => h('td', { class: 'money' }, usd(c))),
        h('td', {}, String(s.calls)), h('td', {}, when(s.expiresAt))))))));
}

export async function sessionPage(id) {
  const account = state.session.accountId;
  const role = sessionStorage.getItem('aex.sessions.role') === 'provider' ? 'provider' : 'consumer';
  const [sessions, calls] = await Promise.all([
    api('GET', `/v1/accounts/${account}/sessions?limit=100&role=${role}`),
    api('GET', `/v1/accounts/${account}/transactions?limit=100&role=${role}&sessionId=${id}`),
  ]);
  if (!sessions.ok) return h('p', { class: 'error' }, sessions.error);
  const s = sessions.data.find((x) => x.id === id);
  if (!s) return h('p', { class: 'error' }, 'No such session of this account.');
  const svc = s.serviceName ? { name: s.serviceName } : await service(s.serviceId);
  return h('section', {},
    h('h1', {}, `Session of ${svc?.name ?? `service ${short(s.serviceId)}`}${s.providerName ? ` from ${s.providerName}` : ''}`),
    h('div', { class: 'card' }, h('dl', { class: 'facts', id: 'session-facts' },
      h('dt', {}, 'Status'), h('dd', {}, pill(s.status), s.statusReason ? ` ${s.statusReason.replace(/_/g, ' ')}` : ''),
      h('dt', {}, 'Budget'), h('dd', {}, usd(s.budgetCents)),
      h('dt', {}, 'Spent'), h('dd', {}, usd(s.spentCents)),
      h('dt', {}, 'Reserved by calls in progress'), h('dd', {}, usd(s.reservedCents)),
      h('dt', {}, s.status === 'closed' ? 'Returned' : 'Left'), h('dd', { id: 'session-left' }, usd(s.status === 'closed' ? s.returnedCents : s.remainingCents)),
      h('dt', {}, 'Settles on delivery'), h('dd', {}, s.autoVerify ? 'yes' : 'no: each call waits for a verify'),
      h('dt', {}, 'Service'), h('dd', {}, named(svc?.name ?? 'the service', s.serviceId, 'service id')),
      h('dt', {}, 'Provider'), h('dd', {}, named(s.providerName ?? 'the provider', s.providerAgentId, 'provider id')),
      h('dt', {}, 'Session'), h('dd', {}, named(`session ${short(s.id)}`, s.id, 'session id')),
      h('dt', {}, 'Expires'), h('dd', {}, when(s.expiresAt)))),
    h('h2', {}, `Calls (${s.calls})`),
    !calls.ok ? h('p', { class: 'error' }, calls.error) : calls.data.length === 0 ? h('p', {}, 'No calls yet.') : scroller('Calls', h('table', { id: 'session-calls' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Call'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Units'), h('th', { scope: 'col', class: 'money' }, 'Price'), h('th', { scope: 'col' }, 'Updated'))),
      h('tbody', {}, calls.data.map((t) => h('tr', {}, h('td', {}, h('a', { href: `#/purchases/${t.id}`, title: t.id }, `call ${short(t.id)}`)), h('td', {}, pill(t.status)),
        h('td', {}, t.units === null ? `up to ${t.maxUnits}` : String(t.units)), h('td', { class: 'money' }, usd(t.agreedPriceCents)), h('td', {}, when(t.updatedAt))))))));
}
