import { api } from '../api.js';
import { agentName, service } from '../directory.js';
import { h, named, pill, say, scroller } from '../elements.js';
import { approvalReason, bought, usd, when } from '../format.js';
import { render } from '../navigation.js';
import { state } from '../session.js';

// D23.2: the approvals inbox a person decides in — what is bought, from whom, for what, and how it
// compares with the rules: the service and its description, the provider and its trust, the price
// against the rule that stopped it, the last 24 hours' spending against the daily limit in force
// (as the exchange reads it: GET /v1/agents/{id}/delegation), the input.

const INPUT_LINES = 5;
const VALUE_CHARS = 80;

/** The input as a few key: value lines (long values cut), the whole of it behind a disclosure. */
function inputSummary(input, id) {
  const entries = Object.entries(input ?? {});
  const text = (v) => {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    return s.length > VALUE_CHARS ? `${s.slice(0, VALUE_CHARS)}… (${s.length} characters)` : s;
  };
  return h('div', {},
    entries.length === 0 ? h('p', { class: 'muted' }, 'No input.') : h('dl', { class: 'input', id: `input-${id}` },
      entries.slice(0, INPUT_LINES).map(([k, v]) => [h('dt', {}, k), h('dd', {}, text(v))])),
    entries.length > INPUT_LINES ? h('p', { class: 'muted' }, `and ${entries.length - INPUT_LINES} more`) : null,
    h('details', {}, h('summary', {}, 'The whole input (JSON)'), h('pre', {}, JSON.stringify(input, null, 2))));
}

function approvalCard(t, { svc, trust, rules, spentToday }) {
  const id = t.id;
  const reason = h('input', { type: 'text', id: `reason-${id}`, maxlength: 1000, placeholder: 'optional' });
  const what = `${bought(t)} for ${usd(t.agreedPriceCents)}`;
  const decide = async (action) => {
    const r = await api('POST', `/v1/transactions/${id}/${action}`, action === 'deny' ? (reason.value ? { reason: reason.value } : {}) : {});
    if (!r.ok) return say(r.error, 'error');
    say(action === 'approve' ? `Approved ${what}: ${r.data.status === 'funds_held' ? 'the price is held' : `it is ${r.data.status.replace(/_/g, ' ')}`}.` : `Denied ${what}.`);
    void render();
  };
  const daily = rules?.maxDailySpendCents;
  const afterThis = spentToday + (t.agreedPriceCents ?? 0);
  const today = rules === null ? `This agent spent ${usd(spentToday)}; its daily limit could not be read.`
    : daily === undefined ? `This agent spent ${usd(spentToday)}; it has no daily limit.`
      : `This agent spent ${usd(spentToday)} of the ${usd(daily)} it may spend a day; with this purchase, ${usd(afterThis)}${afterThis > daily ? ' — over the limit' : ''}.`;
  return h('article', { class: 'card approval', 'data-transaction': id, 'aria-labelledby': `title-${id}` },
    h('h2', { id: `title-${id}` }, what),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Price'), h('dd', { class: 'against' }, h('span', { class: 'price' }, usd(t.agreedPriceCents)), ' — ', h('span', { class: 'over' }, approvalReason(t.approval))),
      h('dt', {}, 'Asked by'), h('dd', {}, named(agentName(t.consumerAgentId), t.consumerAgentId, 'agent id')),
      h('dt', {}, 'Service'), h('dd', {}, named(t.serviceName ?? svc?.name ?? 'a service', t.serviceId, 'service id'),
        svc ? h('span', { class: 'muted' }, ` · ${svc.category} · version ${t.serviceVersion}`) : null,
        svc?.description ? h('p', { class: 'muted', id: `description-${id}` }, svc.description) : null),
      h('dt', {}, 'Provider'), h('dd', {}, named(t.providerName ?? 'the provider', t.providerAgentId, 'provider id'),
        trust ? h('span', { id: `trust-${id}` }, ` · trust ${trust.trustScore}/100 (${trust.counts.settled} settled, ${trust.counts.failed + trust.counts.expired} failed or expired, ${trust.counts.disputesLost} disputes lost)`) : null),
      h('dt', {}, 'Last 24 hours'), h('dd', { id: `today-${id}` }, today),
      h('dt', {}, 'Decide by'), h('dd', {}, when(t.approval && t.approval.expiresAt), h('span', { class: 'muted' }, ' (then it is cancelled)'))),
    h('h3', {}, 'Input'),
    inputSummary(t.input, id),
    h('div', { class: 'actions' },
      h('button', { type: 'button', onclick: () => decide('approve'), 'aria-label': `Approve ${what}` }, 'Approve'),
      h('span', { class: 'deny' }, h('label', { for: `reason-${id}` }, 'Reason to deny'), reason,
        h('button', { type: 'button', class: 'danger', onclick: () => decide('deny'), 'aria-label': `Deny ${what}` }, 'Deny'))));
}

export async function approvalsPage() {
  const account = state.session.accountId;
  const [pending, decided] = await Promise.all([
    api('GET', `/v1/accounts/${account}/approvals?state=pending&limit=100`),
    api('GET', `/v1/accounts/${account}/approvals?state=decided&limit=20`),
  ]);
  if (!pending.ok) return h('p', { class: 'error' }, pending.error);
  // What each buying agent spent in the last 24 hours: what its daily limit is measured against.
  const spent = new Map();
  const spentBy = (id) => {
    if (!spent.has(id)) {
      spent.set(id, api('GET', `/v1/accounts/${account}/spending?days=1&agentId=${id}`)
        .then((r) => (r.ok ? r.data.categories.reduce((n, c) => n + c.settledCents + c.heldCents, 0) : 0)));
    }
    return spent.get(id);
  };
  // The rules in force for each buying agent, read from the exchange that checks them (D10.1): the
  // page cannot merge them itself, a child's being its parent's tightened by its own (D6.8).
  const rules = new Map();
  const rulesBy = (id) => {
    if (!rules.has(id)) rules.set(id, api('GET', `/v1/agents/${id}/delegation`).then((r) => (r.ok ? r.data.inForce : null)));
    return rules.get(id);
  };
  const trusts = new Map();
  const trustOf = (id) => {
    if (!trusts.has(id)) trusts.set(id, api('GET', `/v1/agents/${id}/trust`).then((r) => (r.ok ? r.data : null)));
    return trusts.get(id);
  };
  const cards = await Promise.all(pending.data.map(async (t) => approvalCard(t, {
    svc: await service(t.serviceId), trust: await trustOf(t.providerAgentId), rules: await rulesBy(t.consumerAgentId), spentToday: await spentBy(t.consumerAgentId),
  })));
  return h('section', {},
    h('h1', {}, 'Approvals'),
    h('p', { class: 'muted' }, 'Purchases your agents asked for above what their spending rules approve. Nothing is held until you approve; undecided, they are cancelled at their deadline.'),
    cards.length === 0 ? h('p', { id: 'no-approvals' }, 'Nothing awaits your approval.') : h('div', { id: 'approvals' }, h('p', { class: 'muted' }, `${cards.length} awaiting a decision`), cards),
    h('h2', {}, 'Recently decided'),
    decided.ok && decided.data.length > 0 ? scroller('Recently decided purchases', h('table', { id: 'decided' },
      h('thead', {}, h('tr', {}, ...['Purchase', 'Agent', 'Decision', 'Status'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'))),
      h('tbody', {}, decided.data.map((t) => h('tr', { 'data-transaction': t.id }, h('td', {}, h('a', { href: `#/purchases/${t.id}`, title: t.id }, bought(t))), h('td', {}, agentName(t.consumerAgentId)),
        h('td', {}, `${t.approval.decision}${t.approval.reason ? ` (${t.approval.reason})` : ''}`), h('td', {}, pill(t.status)), h('td', { class: 'money' }, usd(t.agreedPriceCents)))))))
      : h('p', { class: 'muted' }, 'None yet.'));
}
