import { api } from '../api.js';
import { h, pill, say, scroller } from '../elements.js';
import { bought, usd, when } from '../format.js';
import { render } from '../navigation.js';
import { state } from '../session.js';

/** A dispute with what the account may do in it: respond for its provider, decide or withdraw for its buyer. */
export function disputeCard(d, roles) {
  const act = async (path, body, done) => {
    const r = await api('POST', `/v1/disputes/${d.id}/${path}`, body);
    if (!r.ok) return say(r.error, 'error');
    say(`${done}: the dispute is ${r.data.status}${r.data.outcome ? ` (${r.data.outcome.replace(/_/g, ' ')})` : ''}.`);
    void render();
  };
  const actions = [];
  if (roles.includes('provider') && d.status === 'open') {
    const outcome = h('select', { id: 'respond-outcome' }, ['consumer_wins', 'partial_refund', 'provider_redo', 'contest'].map((o) => h('option', { value: o }, o.replace(/_/g, ' '))));
    const refund = h('input', { id: 'respond-refund', type: 'number', min: 1, step: 1 });
    const message = h('input', { id: 'respond-message', type: 'text', maxlength: 2000 });
    actions.push(h('form', {
      class: 'stack', id: 'respond',
      onsubmit: (e) => {
        e.preventDefault();
        void act('respond', { outcome: outcome.value, ...(outcome.value === 'partial_refund' ? { refundCents: Number(refund.value) } : {}), ...(message.value ? { message: message.value } : {}) }, 'Answered');
      },
    }, h('h3', {}, 'Answer for your provider'), h('label', { for: 'respond-outcome' }, 'Answer'), outcome, h('label', { for: 'respond-refund' }, 'Refund (cents, for a partial refund)'), refund,
    h('label', { for: 'respond-message' }, 'Message'), message, h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Send answer'))));
  }
  if (roles.includes('consumer') && d.status === 'proposed') {
    actions.push(h('div', { class: 'actions', id: 'decide' }, h('span', {}, `The provider proposes ${d.proposal ? `${d.proposal.outcome.replace(/_/g, ' ')}${d.proposal.refundCents ? ` of ${usd(d.proposal.refundCents)}` : ''}` : 'a settlement'}.`),
      h('button', { type: 'button', onclick: () => act('decide', { accept: true }, 'Accepted') }, 'Accept proposal'),
      h('button', { type: 'button', class: 'danger', onclick: () => act('decide', { accept: false }, 'Refused') }, 'Refuse (escalate)')));
  }
  if (roles.includes('consumer') && d.status !== 'resolved') {
    actions.push(h('div', { class: 'actions' }, h('button', { type: 'button', class: 'secondary', onclick: () => act('withdraw', {}, 'Withdrawn') }, 'Withdraw the dispute (the provider is paid)')));
  }
  return h('div', { class: 'card', id: 'dispute' },
    h('h2', {}, 'Dispute'),
    h('dl', { class: 'facts' }, h('dt', {}, 'Status'), h('dd', {}, pill(d.status)), h('dt', {}, 'Reason'), h('dd', {}, d.reason.replace(/_/g, ' ')), h('dt', {}, 'Description'), h('dd', {}, d.description),
      h('dt', {}, 'Deadline'), h('dd', {}, when(d.deadlineAt)), d.outcome ? [h('dt', {}, 'Outcome'), h('dd', {}, d.outcome.replace(/_/g, ' '))] : null),
    h('ol', { class: 'timeline' }, d.messages.map((m) => h('li', {}, h('time', { datetime: m.at }, when(m.at)), `${m.from}: ${m.kind}${m.outcome ? ` ${m.outcome.replace(/_/g, ' ')}` : ''}${m.message ? ` — ${m.message}` : ''}`))),
    actions);
}

export async function ownerDisputesPage() {
  const account = state.session.accountId;
  const [purchases, sold] = await Promise.all(['consumer', 'provider'].map((role) => api('GET', `/v1/accounts/${account}/transactions?role=${role}&status=disputed&limit=100`)));
  const rows = [...(purchases.ok ? purchases.data.map((t) => ['purchase', t]) : []), ...(sold.ok ? sold.data.map((t) => ['sale', t]) : [])];
  return h('section', {},
    h('h1', {}, 'Disputes'),
    h('p', { class: 'muted' }, 'Disputes of your agents\' purchases and sales still open. Open one to answer it for your provider, or to decide on a proposal for your buyer.'),
    rows.length === 0 ? h('p', { id: 'no-owner-disputes' }, 'No dispute is open.') : scroller('Open disputes', h('table', { id: 'owner-disputes' },
      h('thead', {}, h('tr', {}, ...['What', 'Side', 'Status'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'))),
      h('tbody', {}, rows.map(([side, t]) => h('tr', { 'data-transaction': t.id }, h('td', {}, h('a', { href: `#/purchases/${t.id}`, title: t.id }, bought(t))), h('td', {}, side), h('td', {}, pill(t.status)), h('td', { class: 'money' }, usd(t.agreedPriceCents))))))));
}
