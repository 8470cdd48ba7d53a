import { api } from '../api.js';
import { h, pill, say } from '../elements.js';
import { short } from '../format.js';
import { render } from '../navigation.js';
import { state } from '../session.js';

// The account's agents, their keys and spending rules.

const RULES = [
  ['maxTransactionCents', 'Largest purchase (cents)', 'number'],
  ['maxDailySpendCents', 'Spending in 24 hours (cents)', 'number'],
  ['requireHumanApprovalAboveCents', 'Approve purchases above (cents)', 'number'],
  ['autoApproveBelow', 'Only purchases below this go through alone (cents)', 'number'],
  ['allowedCategories', 'Allowed categories (comma-separated)', 'list'],
  ['blockedCategories', 'Blocked categories (comma-separated)', 'list'],
];

/** A form editing a set of delegation rules; `save(rules)` answers the API's outcome. */
function rulesForm(id, title, rules, save) {
  const inputs = RULES.map(([name, label, kind]) => {
    const value = rules[name];
    const input = h('input', { id: `${id}-${name}`, name, type: kind === 'number' ? 'number' : 'text', min: kind === 'number' ? 1 : null, step: kind === 'number' ? 1 : null, value: value === undefined ? '' : Array.isArray(value) ? value.join(', ') : value });
    return { name, kind, input, row: h('div', { class: 'stack' }, h('label', { for: input.id }, label), input) };
  });
  return h('form', {
    class: 'card stack', id, 'aria-labelledby': `${id}-title`,
    onsubmit: async (e) => {
      e.preventDefault();
      const next = {};
      for (const { name, kind, input } of inputs) {
        const v = input.value.trim();
        if (v === '') continue;
        next[name] = kind === 'number' ? Number(v) : v.split(',').map((x) => x.trim()).filter(Boolean);
      }
      const r = await save(next);
      say(r.ok ? `Saved the rules: ${Object.keys(r.data).length ? Object.entries(r.data).map(([k, v]) => `${k} ${Array.isArray(v) ? v.join('/') : v}`).join(', ') : 'none'}.` : r.error, r.ok ? 'done' : 'error');
    },
  }, h('h2', { id: `${id}-title` }, title), inputs.map((i) => i.row), h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save rules')),
  h('p', { class: 'muted' }, 'Empty fields set nothing. Saving replaces these rules as a whole.'));
}

export async function agentsPage() {
  const account = state.session.accountId;
  const [agents, acc] = await Promise.all([api('GET', `/v1/accounts/${account}/agents?limit=100`), api('GET', `/v1/accounts/${account}`)]);
  if (!agents.ok) return h('p', { class: 'error' }, agents.error);
  const shownKey = h('div', { role: 'alert', id: 'new-key' });
  const rotate = (a) => async () => {
    const r = await api('POST', `/v1/agents/${a.id}/keys/rotate`);
    if (!r.ok) return say(r.error, 'error');
    const own = a.id === state.session.agentId;
    shownKey.replaceChildren(h('div', { class: 'card' }, h('p', {}, `New API key of ${a.name} (shown once; the old one stopped working):`), h('code', {}, r.data.apiKey),
      own ? h('p', {}, 'It was the key of this session: sign in again with the new one.') : null));
    if (!own) void render().then(() => document.getElementById('main').prepend(shownKey));
  };
  return h('section', {},
    h('h1', {}, 'Agents and rules'),
    shownKey,
    h('table', { id: 'agents' },
      h('thead', {}, h('tr', {}, ...['Agent', 'Status', 'Trust', 'Key', 'Rules of its own', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, agents.data.map((a) => h('tr', { 'data-agent': a.id },
        h('td', {}, a.name, h('br'), h('span', { class: 'muted' }, short(a.id)), a.id === state.session.agentId ? h('span', { class: 'muted' }, ' (owner)') : null),
        h('td', {}, pill(a.status)), h('td', {}, String(a.trustScore)), h('td', {}, h('code', {}, `${a.keyPrefix}…`)),
        h('td', {}, Object.keys(a.delegation).length ? Object.entries(a.delegation).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : v}`).join('; ') : h('span', { class: 'muted' }, 'the account\'s defaults')),
        h('td', {}, h('div', { class: 'actions' },
          h('a', { href: `#/agents`, onclick: (e) => { e.preventDefault(); document.getElementById(`rules-${a.id}`)?.scrollIntoView(); } }, 'Edit rules'),
          h('button', { type: 'button', class: 'secondary', onclick: rotate(a), 'aria-label': `Rotate key of ${a.name}` }, 'Rotate key'))))))),
    acc.ok ? rulesForm('account-rules', 'The account\'s default rules', acc.data.defaultDelegation, (rules) => api('PUT', `/v1/accounts/${account}/delegation`, rules)) : null,
    agents.data.filter((a) => a.id !== state.session.agentId).map((a) => rulesForm(`rules-${a.id}`, `Rules of ${a.name} (${short(a.id)})`, a.delegation, (rules) => api('PUT', `/v1/agents/${a.id}/delegation`, rules))));
}
