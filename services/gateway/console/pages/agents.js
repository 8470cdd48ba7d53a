import { api } from '../api.js';
import { h, named, pill, say, scroller } from '../elements.js';
import { usd } from '../format.js';
import { render } from '../navigation.js';
import { state } from '../session.js';

// The account's agents, their keys and spending rules.

/** The delegation rules as a person edits them: money in dollars, categories as a list. */
const RULES = [
  ['maxTransactionCents', 'Max per purchase', 'money', 'No single purchase above this.'],
  ['maxDailySpendCents', 'Max spending per 24 hours', 'money', 'Purchases over the last 24 hours, added up.'],
  ['requireHumanApprovalAboveCents', 'Ask me above', 'money', 'A purchase above this waits for your approval.'],
  ['autoApproveBelow', 'Goes through alone below', 'money', 'Only a purchase below this goes through without you.'],
  ['allowedCategories', 'Allowed categories', 'list', 'Comma-separated; empty: every category.'],
  ['blockedCategories', 'Blocked categories', 'list', 'Comma-separated.'],
];
const LABEL = Object.fromEntries(RULES.map(([name, label]) => [name, label.toLowerCase()]));

/** A rule's value as the notice says it: "$2.50", "a, b", "—" when there is none. */
const shown = (name, v) => (v === null || v === undefined ? (RULES.find((r) => r[0] === name)?.[2] === 'money' ? '$—' : '—') : Array.isArray(v) ? v.join(', ') : typeof v === 'number' ? usd(v) : String(v));

/** What the field holds as the API's value: cents, a list, or null when emptied. */
function valueOf(kind, text) {
  const v = text.trim();
  if (v === '') return null;
  if (kind === 'money') return Math.round(Number(v) * 100);
  return v.split(',').map((x) => x.trim()).filter(Boolean);
}

const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * A form editing a set of delegation rules. It sends only the fields the person changed (`save`
 * PATCHes them: a field emptied is null, which removes that rule) and says what changed.
 */
function rulesForm(id, title, rules, save) {
  const inputs = RULES.map(([name, label, kind, hint]) => {
    const value = rules[name];
    const input = h('input', {
      id: `${id}-${name}`, name, type: kind === 'money' ? 'number' : 'text', min: kind === 'money' ? 0.01 : null, step: kind === 'money' ? 0.01 : null, inputmode: kind === 'money' ? 'decimal' : null,
      value: value === undefined ? '' : Array.isArray(value) ? value.join(', ') : (value / 100).toFixed(2), 'aria-describedby': `${id}-${name}-hint`,
    });
    return { name, kind, input, row: [h('label', { for: input.id }, kind === 'money' ? `${label} ($)` : label), input, h('span', { class: 'hint', id: `${id}-${name}-hint` }, hint)] };
  });
  return h('form', {
    class: 'card', id, 'aria-labelledby': `${id}-title`,
    onsubmit: async (e) => {
      e.preventDefault();
      const changed = {};
      for (const { name, kind, input } of inputs) {
        const next = valueOf(kind, input.value);
        if (!same(next, rules[name])) changed[name] = next;
      }
      if (Object.keys(changed).length === 0) return say('Nothing changed: no rule was sent.');
      const r = await save(changed);
      if (!r.ok) return say(r.error, 'error');
      const changes = r.data.changes ?? [];
      say(changes.length ? `Changed: ${changes.map((c) => `${LABEL[c.field] ?? c.field} ${shown(c.field, c.from)} → ${shown(c.field, c.to)}`).join('; ')}.` : 'Nothing changed.');
      void render();
    },
  }, h('h2', { id: `${id}-title` }, title), h('div', { class: 'rules-grid' }, inputs.map((i) => i.row)),
  h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save changes')),
  h('p', { class: 'muted' }, 'Only the rules you change are sent; empty a field to remove its rule.'));
}

export async function agentsPage() {
  const account = state.session.accountId;
  const acc = await api('GET', `/v1/accounts/${account}`);
  const agents = [...(state.agents?.values() ?? [])];
  const shownKey = h('div', { role: 'alert', id: 'new-key' });
  const rotate = (a) => async () => {
    const r = await api('POST', `/v1/agents/${a.id}/keys/rotate`);
    if (!r.ok) return say(r.error, 'error');
    const own = a.id === state.session.agentId;
    shownKey.replaceChildren(h('div', { class: 'card' }, h('p', {}, `New API key of ${a.name} (shown once; the old one stopped working):`), h('code', {}, r.data.apiKey),
      own ? h('p', {}, 'It was the key of this session: sign in again with the new one.') : null));
    if (!own) void render().then(() => document.getElementById('page').prepend(shownKey));
  };
  const rulesText = (d, none) => (Object.keys(d).length ? Object.entries(d).map(([k, v]) => `${LABEL[k] ?? k}: ${shown(k, v)}`).join('; ') : h('span', { class: 'muted' }, none));
  // D6.8: a child's own rules do not say what applies to it (its parent's rules, tightened by its
  // own): the exchange says it. Other agents' are their own over the account's defaults, shown below.
  const children = await Promise.all(agents.filter((a) => a.parentAgentId).map(async (a) => [a.id, await api('GET', `/v1/agents/${a.id}/delegation`)]));
  const inForce = new Map(children.filter(([, r]) => r.ok).map(([id, r]) => [id, r.data.inForce]));
  return h('section', {},
    h('h1', {}, 'Agents and rules'),
    shownKey,
    scroller('Agents', h('table', { id: 'agents' },
      h('thead', {}, h('tr', {}, ...['Agent', 'Status', 'Trust', 'Key', 'Rules of its own', 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, agents.map((a) => h('tr', { 'data-agent': a.id },
        h('td', {}, named(a.name, a.id, 'agent id'), a.id === state.session.agentId ? h('span', { class: 'muted' }, ' (owner)') : null),
        h('td', {}, pill(a.status)), h('td', {}, `${a.trustScore}/100`), h('td', {}, h('code', {}, `${a.keyPrefix}…`)),
        h('td', {}, rulesText(a.delegation, a.parentAgentId ? 'none of its own' : 'the account\'s defaults'),
          inForce.has(a.id) ? h('div', { class: 'muted', id: `in-force-${a.id}` }, 'In force: ', rulesText(inForce.get(a.id), 'none')) : null),
        h('td', {}, h('div', { class: 'actions' },
          a.id === state.session.agentId ? null : h('a', { href: `#/agents`, onclick: (e) => { e.preventDefault(); document.getElementById(`rules-${a.id}`)?.scrollIntoView(); } }, `Edit rules of ${a.name}`),
          h('button', { type: 'button', class: 'secondary', onclick: rotate(a), 'aria-label': `Rotate key of ${a.name}` }, 'Rotate key')))))))),
    acc.ok ? rulesForm('account-rules', 'The account\'s default rules', acc.data.defaultDelegation, (rules) => api('PATCH', `/v1/accounts/${account}/delegation`, rules)) : null,
    agents.filter((a) => a.id !== state.session.agentId).map((a) => rulesForm(`rules-${a.id}`, `Rules of ${a.name}`, a.delegation, (rules) => api('PATCH', `/v1/agents/${a.id}/delegation`, rules))));
}
