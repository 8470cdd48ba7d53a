import { api } from '../api.js';
import { lineChart } from '../charts.js';
import { h, say, scroller } from '../elements.js';
import { short, usd, when } from '../format.js';
import { render } from '../navigation.js';

// The operator's pages.

const OUTCOMES = ['consumer_wins', 'provider_wins', 'partial_refund', 'provider_redo'];

export async function escalatedDisputesPage() {
  const r = await api('GET', '/admin/v1/disputes?status=escalated&limit=100');
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  const rows = r.data.map((d) => {
    const outcome = h('select', { 'aria-label': `Outcome for dispute ${short(d.id)}` }, OUTCOMES.map((o) => h('option', { value: o }, o.replace(/_/g, ' '))));
    const refund = h('input', { type: 'number', min: 1, step: 1, 'aria-label': `Refund in cents for dispute ${short(d.id)}`, placeholder: 'refund (cents)' });
    const resolve = async () => {
      const body = { outcome: outcome.value, ...(outcome.value === 'partial_refund' ? { refundCents: Number(refund.value) } : {}) };
      const res = await api('POST', `/admin/v1/disputes/${d.id}/resolve`, body);
      if (!res.ok) return say(res.error, 'error');
      say(`Resolved dispute ${short(d.id)}: ${res.data.outcome}.`);
      void render();
    };
    return h('tr', { 'data-dispute': d.id }, h('td', {}, short(d.id)), h('td', {}, short(d.transactionId)), h('td', {}, d.reason.replace(/_/g, ' ')), h('td', {}, d.description),
      h('td', {}, when(d.deadlineAt)), h('td', {}, h('div', { class: 'actions' }, outcome, refund, h('button', { type: 'button', onclick: resolve }, 'Resolve'))));
  });
  return h('section', {},
    h('h1', {}, 'Escalated disputes'),
    h('p', { class: 'muted' }, 'Disputes the provider contested or the consumer refused to settle: yours to decide. Resolving moves the money at once.'),
    rows.length === 0 ? h('p', { id: 'no-disputes' }, 'No dispute waits for you.') : scroller('Escalated disputes', h('table', { id: 'disputes' },
      h('thead', {}, h('tr', {}, ...['Dispute', 'Purchase', 'Reason', 'Description', 'Deadline', 'Resolve'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows))));
}

export async function figuresPage() {
  const r = await api('GET', '/admin/v1/figures?hours=24');
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  const f = r.data;
  const hourly = (k) => f.perHour.map((p) => [Date.parse(p.hour), p[k]]);
  const perHour = { xLabel: 'Hour', yLabel: 'US dollars', xTick: (ms) => new Date(ms).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' }) };
  const section = h('section', {},
    h('h1', {}, 'Figures'),
    h('div', { class: 'card' }, h('dl', { class: 'facts', id: 'figures' },
      h('dt', {}, 'Held in escrow now'), h('dd', {}, usd(f.heldCents)),
      h('dt', {}, 'Purchases, last 24 h'), h('dd', {}, String(f.purchases)),
      h('dt', {}, 'Settled, last 24 h'), h('dd', {}, usd(f.settledCents)),
      h('dt', {}, 'Fees earned, last 24 h'), h('dd', {}, usd(f.feesCents)))),
    h('h2', {}, 'Purchases per hour'), lineChart(hourly('purchases'), 'Purchases per hour', String, { ...perHour, yLabel: 'Purchases' }),
    h('h2', {}, 'Volume settled per hour'), lineChart(hourly('volumeCents'), 'Volume settled per hour', usd, perHour),
    h('h2', {}, 'Fees per hour'), lineChart(hourly('feesCents'), 'Fees per hour', usd, perHour));
  return section;
}

export async function deadLettersPage() {
  const r = await api('GET', '/admin/v1/webhooks/dead-letters?limit=100');
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  const retry = (d) => async () => {
    const res = await api('POST', `/admin/v1/webhooks/dead-letters/${encodeURIComponent(d.webhookId)}/retry`);
    if (!res.ok) return say(res.error, 'error');
    say(`Sent again: ${d.eventType} to ${short(d.agentId)} is ${res.data.status}.`);
    void render();
  };
  return h('section', {},
    h('h1', {}, 'Dead letters'),
    r.data.length === 0 ? h('p', { id: 'no-dead-letters' }, 'No webhook is dead-lettered.') : scroller('Dead letters', h('table', { id: 'dead-letters' },
      h('thead', {}, h('tr', {}, ...['Event', 'Agent', 'Attempts', 'Created', 'Action'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, r.data.map((d) => h('tr', { 'data-webhook': d.webhookId }, h('td', {}, d.eventType), h('td', {}, short(d.agentId)), h('td', {}, String(d.attempts.length)), h('td', {}, when(d.createdAt)),
        h('td', {}, h('button', { type: 'button', onclick: retry(d), 'aria-label': `Retry ${d.eventType} to ${short(d.agentId)}` }, 'Retry'))))))));
}

export function suspendPage() {
  const input = h('input', { id: 'suspend-agent', type: 'text', required: true, pattern: '[0-9a-fA-F-]{36}', autocomplete: 'off' });
  return h('section', {},
    h('h1', {}, 'Suspend an agent'),
    h('form', {
      class: 'card stack', id: 'suspend',
      onsubmit: async (e) => {
        e.preventDefault();
        const r = await api('POST', `/admin/v1/agents/${encodeURIComponent(input.value.trim())}/suspend`);
        say(r.ok ? `Agent ${short(r.data.id)} is ${r.data.status}: its key no longer starts anything, its transactions go on.` : r.error, r.ok ? 'done' : 'error');
      },
    }, h('label', { for: 'suspend-agent' }, 'Agent id'), input, h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'danger' }, 'Suspend')),
    h('p', { class: 'muted' }, 'The agent is deactivated; the action is in the audit log.')));
}

export async function auditPage() {
  const r = await api('GET', '/admin/v1/audit?limit=100');
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  return h('section', {},
    h('h1', {}, 'Audit log'),
    r.data.length === 0 ? h('p', {}, 'No operator action yet.') : scroller('Audit log', h('table', { id: 'audit' },
      h('thead', {}, h('tr', {}, ...['When', 'Action', 'Target', 'Details'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, r.data.map((a) => h('tr', {}, h('td', {}, when(a.at)), h('td', {}, a.action), h('td', {}, a.target ? `${a.target.type} ${short(a.target.id)}` : '–'), h('td', {}, JSON.stringify(a.details))))))));
}

export async function ledgerPage() {
  const r = await api('GET', '/admin/v1/ledger/check');
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  return h('section', {},
    h('h1', {}, 'Ledger check'),
    h('div', { class: 'card' }, h('p', { id: 'ledger-result' }, r.data.ok ? `OK: ${r.data.walletsChecked} wallets checked, every invariant holds.` : `${r.data.violations.length} violation(s) found.`),
      h('p', { class: 'muted' }, `Checked ${when(r.data.checkedAt)}.`)),
    r.data.violations.length ? scroller('Violations', h('table', {}, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Invariant'), h('th', { scope: 'col' }, 'Wallet'), h('th', { scope: 'col' }, 'Details'))),
      h('tbody', {}, r.data.violations.map((v) => h('tr', {}, h('td', {}, v.invariant), h('td', {}, v.walletId || '–'), h('td', {}, JSON.stringify(v.details))))))) : null);
}
