import { api } from '../api.js';
import { h, pill, say } from '../elements.js';
import { short, usd, when, approvalReason } from '../format.js';
import { render } from '../navigation.js';
import { state } from '../session.js';

export async function approvalsPage() {
  const account = state.session.accountId;
  const [pending, decided] = await Promise.all([api('GET', `/v1/accounts/${account}/approvals?state=pending&limit=100`), api('GET', `/v1/accounts/${account}/approvals?state=decided&limit=20`)]);
  if (!pending.ok) return h('p', { class: 'error' }, pending.error);
  const rows = pending.data.map((t) => {
    const reason = h('input', { type: 'text', maxlength: 1000, 'aria-label': `Reason for denying ${short(t.id)}`, placeholder: 'reason (optional)' });
    const decide = async (action) => {
      const r = await api('POST', `/v1/transactions/${t.id}/${action}`, action === 'deny' ? (reason.value ? { reason: reason.value } : {}) : {});
      if (!r.ok) return say(r.error, 'error');
      say(action === 'approve' ? `Approved ${short(t.id)}: ${usd(r.data.agreedPriceCents)} ${r.data.status === 'funds_held' ? 'held' : r.data.status}.` : `Denied ${short(t.id)}.`);
      void render();
    };
    return h('tr', { 'data-transaction': t.id },
      h('td', {}, h('a', { href: `#/purchases/${t.id}` }, short(t.id))), h('td', {}, short(t.consumerAgentId)), h('td', {}, short(t.serviceId)),
      h('td', { class: 'money' }, usd(t.agreedPriceCents)), h('td', {}, approvalReason(t.approval)), h('td', {}, when(t.approval && t.approval.expiresAt)),
      h('td', {}, h('div', { class: 'actions' },
        h('button', { type: 'button', onclick: () => decide('approve'), 'aria-label': `Approve ${short(t.id)} for ${usd(t.agreedPriceCents)}` }, 'Approve'),
        h('span', { class: 'deny' }, reason, h('button', { type: 'button', class: 'danger', onclick: () => decide('deny'), 'aria-label': `Deny ${short(t.id)}` }, 'Deny')))));
  });
  return h('section', {},
    h('h1', {}, 'Approvals'),
    h('p', { class: 'muted' }, 'Purchases your agents asked for above what their spending rules approve. Nothing is held until you approve; undecided, they are cancelled at their deadline.'),
    rows.length === 0 ? h('p', { id: 'no-approvals' }, 'Nothing awaits your approval.') : h('table', { id: 'approvals' },
      h('caption', {}, `${rows.length} awaiting a decision`),
      h('thead', {}, h('tr', {}, ...['Purchase', 'Agent', 'Service'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'), ...['Why', 'Decide by', 'Decision'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows)),
    h('h2', {}, 'Recently decided'),
    decided.ok && decided.data.length > 0 ? h('table', { id: 'decided' },
      h('thead', {}, h('tr', {}, ...['Purchase', 'Agent', 'Decision', 'Status'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'))),
      h('tbody', {}, decided.data.map((t) => h('tr', {}, h('td', {}, h('a', { href: `#/purchases/${t.id}` }, short(t.id))), h('td', {}, short(t.consumerAgentId)),
        h('td', {}, `${t.approval.decision}${t.approval.reason ? ` (${t.approval.reason})` : ''}`), h('td', {}, pill(t.status)), h('td', { class: 'money' }, usd(t.agreedPriceCents))))))
      : h('p', { class: 'muted' }, 'None yet.'));
}
