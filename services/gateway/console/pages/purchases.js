import { api } from '../api.js';
import { agentName } from '../directory.js';
import { h, named, pill, scroller } from '../elements.js';
import { bought, short, usd, when, approvalReason } from '../format.js';
import { go, render } from '../navigation.js';
import { state } from '../session.js';
import { disputeCard } from './disputes.js';

// The account's purchases, and each one's page with its timeline.

const ENDINGS = { cancelled: 'Cancelled', expired: 'Expired', failed: 'Failed' };
const STATUSES = ['awaiting_approval', 'negotiating', 'funds_held', 'executing', 'delivered', 'disputed', 'settled', 'cancelled', 'expired', 'failed'];

/** The purchases `filter` names (`q`, `status`, `agentId`): it is the page's address, so a search is kept, shared and gone back to. */
export async function purchasesPage(filter) {
  const query = new URLSearchParams({ limit: '50', ...(filter.get('status') ? { status: filter.get('status') } : {}), ...(filter.get('agentId') ? { agentId: filter.get('agentId') } : {}), ...(filter.get('q') ? { q: filter.get('q') } : {}) });
  const r = await api('GET', `/v1/accounts/${state.session.accountId}/transactions?${query}`);
  const search = h('input', { id: 'filter-q', type: 'search', maxlength: 100, value: filter.get('q') ?? '', placeholder: 'e.g. summariser, Acme', 'aria-describedby': 'filter-q-help' });
  const status = h('select', { id: 'filter-status' }, h('option', { value: '' }, 'any'), STATUSES.map((st) => h('option', { value: st, selected: filter.get('status') === st }, st.replace(/_/g, ' '))));
  const agent = h('select', { id: 'filter-agent' }, h('option', { value: '' }, 'any'), [...(state.agents?.values() ?? [])].map((a) => h('option', { value: a.id, selected: filter.get('agentId') === a.id }, a.name)));
  const filters = h('form', {
    class: 'search card', id: 'filters', role: 'search',
    onsubmit: (e) => {
      e.preventDefault();
      const chosen = new URLSearchParams(Object.entries({ q: search.value.trim(), status: status.value, agentId: agent.value }).filter(([, v]) => v));
      go(chosen.toString() ? `#/purchases?${chosen}` : '#/purchases');
    },
  }, h('label', { for: 'filter-q' }, 'Service or provider'), h('div', {}, search, h('span', { id: 'filter-q-help', class: 'hint' }, 'Any part of the name, in any case.')),
  h('label', { for: 'filter-status' }, 'Status'), status, h('label', { for: 'filter-agent' }, 'Bought by'), agent,
  h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Find'), [...filter.values()].some(Boolean)
    ? h('button', { type: 'button', class: 'secondary', onclick: () => go('#/purchases') }, 'Show all') : null));
  return h('section', {},
    h('h1', {}, 'Purchases'),
    filters,
    !r.ok ? h('p', { class: 'error' }, r.error) : r.data.length === 0 ? h('p', { id: 'no-purchases' }, 'No purchase matches.') : scroller('Purchases', h('table', { id: 'purchases' },
      h('caption', {}, `${r.pagination ? r.pagination.total : r.data.length} ${filter.get('q') ? `matching “${filter.get('q')}”` : 'in all'}${r.pagination && r.pagination.total > r.data.length ? `, the newest ${r.data.length} shown` : ''}`),
      h('thead', {}, h('tr', {}, ...['Service', 'Provider', 'Bought by', 'Status'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'), h('th', { scope: 'col' }, 'Bought'))),
      h('tbody', {}, r.data.map((t) => h('tr', { 'data-transaction': t.id },
        h('td', {}, h('a', { href: `#/purchases/${t.id}`, title: t.id }, t.serviceName ?? `service ${short(t.serviceId)}`)), h('td', { title: t.providerAgentId }, t.providerName ?? '–'),
        h('td', {}, agentName(t.consumerAgentId)), h('td', {}, pill(t.status)),
        h('td', { class: 'money' }, usd(t.agreedPriceCents)), h('td', {}, when(t.createdAt))))))));
}

export async function purchasePage(id) {
  const account = state.session.accountId;
  const r = await api('GET', `/v1/accounts/${account}/transactions/${id}`);
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  const { transaction: t, negotiation, dispute, roles, receipt } = r.data;
  // The account's own agent in it: the buyer of a purchase, the provider of a sale.
  const mine = roles.includes('consumer') ? t.consumerAgentId : t.providerAgentId;
  const [ledger, hooks] = await Promise.all([
    api('GET', `/v1/wallets/${mine}/transactions?limit=100`),
    api('GET', `/v1/agents/${mine}/webhook/deliveries?limit=100`),
  ]);
  const events = [['initiatedAt', 'Created'], ['fundsHeldAt', 'Price held in escrow'], ['deliveredAt', 'Delivered'], ['settledAt', 'Settled: the provider was paid']]
    .filter(([k]) => t[k]).map(([k, text]) => ({ at: t[k], text }));
  if (t.approval) {
    events.push({ at: t.approval.requestedAt, text: `Awaiting approval (${approvalReason(t.approval)})` });
    if (t.approval.decidedAt) events.push({ at: t.approval.decidedAt, text: `${t.approval.decision === 'denied' ? 'Denied' : 'Approved'} by ${agentName(t.approval.decidedBy)}${t.approval.reason ? `: ${t.approval.reason}` : ''}` });
  }
  for (const m of negotiation) events.push({ at: m.createdAt, text: `Negotiation, round ${m.round}: ${m.messageType.replace(/_/g, ' ')}${m.terms.priceCents ? ` at ${usd(m.terms.priceCents)}` : ''} by ${m.fromAgentId === t.consumerAgentId ? 'the buyer' : 'the provider'}` });
  if (dispute) events.push({ at: dispute.openedAt, text: `Disputed: ${dispute.reason.replace(/_/g, ' ')}` });
  if (dispute && dispute.resolvedAt) events.push({ at: dispute.resolvedAt, text: `Dispute resolved: ${dispute.outcome}` });
  if (ledger.ok) for (const e of ledger.data.filter((x) => x.transactionId === t.id)) events.push({ at: e.createdAt, text: `Ledger: ${e.txType.replace(/_/g, ' ')} ${usd(e.amountCents)}` });
  if (hooks.ok) {
    for (const d of hooks.data.filter((x) => x.payload && x.payload.data && x.payload.data.transactionId === t.id)) {
      events.push({ at: d.createdAt, text: `Webhook ${d.eventType} to ${mine === t.consumerAgentId ? 'the buyer' : 'the provider'}: ${d.status}${d.attempts.length ? ` after ${d.attempts.length} attempt(s)` : ''}` });
    }
  }
  // How a purchase that was not settled ended: its last change is its end.
  const ending = ENDINGS[t.status];
  if (ending) events.push({ at: t.updatedAt, text: `${ending}${t.statusReason ? ` (${t.statusReason.replace(/_/g, ' ')})` : ''}` });
  events.sort((a, b) => a.at.localeCompare(b.at));
  return h('section', {},
    h('h1', {}, `${roles.includes('consumer') ? 'Purchase' : 'Sale'}: ${bought(t)}`),
    h('div', { class: 'card' }, h('dl', { class: 'facts' },
      h('dt', {}, 'Status'), h('dd', { id: 'purchase-status' }, pill(t.status), t.statusReason ? ` ${t.statusReason.replace(/_/g, ' ')}` : ''),
      h('dt', {}, 'Price'), h('dd', {}, `${usd(t.agreedPriceCents)}${feeNote(t)}`),
      ...(t.metered ? [h('dt', {}, 'Usage'), h('dd', { id: 'purchase-usage' }, t.units === null ? `metered: up to ${t.maxUnits} units held, usage not reported yet` : `${t.units} of at most ${t.maxUnits} units, as the provider's signed delivery reports`)] : []),
      ...(t.sessionId ? [h('dt', {}, 'Session'), h('dd', {}, h('a', { href: `#/sessions/${t.sessionId}`, title: t.sessionId }, `session ${short(t.sessionId)}`))] : []),
      h('dt', {}, 'Service'), h('dd', { id: 'purchase-service' }, named(t.serviceName ?? 'the service', t.serviceId, 'service id'), h('span', { class: 'muted' }, ` version ${t.serviceVersion}`)),
      h('dt', {}, 'Provider'), h('dd', { id: 'purchase-provider' }, named(t.providerName ?? 'the provider', t.providerAgentId, 'provider id')),
      h('dt', {}, 'Buying agent'), h('dd', { id: 'purchase-buyer' }, named(roles.includes('consumer') ? agentName(t.consumerAgentId) : 'another account\'s agent', t.consumerAgentId, 'agent id')),
      h('dt', {}, 'Purchase'), h('dd', {}, named(`purchase ${short(t.id)}`, t.id, 'purchase id')))),
    dispute ? disputeCard(dispute, roles) : null,
    receipt ? receiptCard(receipt, { buyer: roles.includes('consumer') ? agentName(t.consumerAgentId) : 'another account\'s agent', provider: t.providerName ?? 'the provider' }) : null,
    h('h2', {}, 'Timeline'),
    h('ol', { class: 'timeline', id: 'timeline' }, events.map((e) => h('li', {}, h('time', { datetime: e.at }, when(e.at)), e.text))),
    h('p', {}, h('button', { type: 'button', class: 'secondary', onclick: () => render() }, 'Refresh')));
}

/** D18: the signed receipt's fields (its parties by name, their DIDs on hover), and the JWS anyone verifies with /.well-known/jwks.json. */
function receiptCard(r, names) {
  const c = r.claims;
  return h('div', { class: 'card', id: 'receipt' },
    h('h2', {}, 'Receipt'),
    h('p', {}, 'Signed by the exchange; anyone can check it with its public keys at ', h('a', { href: '/.well-known/jwks.json' }, '/.well-known/jwks.json'), '.'),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Status'), h('dd', {}, `${c.status}${c.outcome ? ` (dispute: ${c.outcome})` : ''}`),
      h('dt', {}, 'Price'), h('dd', {}, usd(c.priceCents)),
      h('dt', {}, 'Fee'), h('dd', {}, usd(c.platformFeeCents)),
      h('dt', {}, 'Refunded'), h('dd', {}, usd(c.refundedCents)),
      ...(c.units !== null ? [h('dt', {}, 'Units'), h('dd', {}, String(c.units))] : []),
      h('dt', {}, 'Input digest'), h('dd', {}, h('code', {}, c.inputDigest ?? '–')),
      h('dt', {}, 'Output digest'), h('dd', {}, h('code', {}, c.outputDigest ?? '–')),
      h('dt', {}, 'Buyer'), h('dd', { id: 'receipt-buyer' }, named(names.buyer, c.consumer, 'DID')),
      h('dt', {}, 'Provider'), h('dd', { id: 'receipt-provider' }, named(names.provider, c.provider, 'DID'))),
    h('details', {}, h('summary', {}, 'The signed receipt (compact JWS)'), h('pre', { class: 'jws' }, r.receipt)));
}

/** The platform's fee as far as it applies: charged once settled, due while the purchase may still settle, none otherwise. */
function feeNote(t) {
  if (t.platformFeeCents === null || t.platformFeeCents === undefined) return '';
  if (t.status === 'settled') return ` (fee ${usd(t.platformFeeCents)})`;
  if (['funds_held', 'executing', 'delivered', 'disputed', 'validation_failed'].includes(t.status)) return ` (fee ${usd(t.platformFeeCents)} when settled)`;
  return '';
}
