import { api } from '../api.js';
import { h, named, pill, say, scroller } from '../elements.js';
import { when } from '../format.js';
import { render } from '../navigation.js';
import { state } from '../session.js';

// The webhooks sent to the account's agents, and their dead letters.

export async function webhooksPage() {
  const lists = await Promise.all([...(state.agents?.values() ?? [])].map(async (a) => ({ a, r: await api('GET', `/v1/agents/${a.id}/webhook/deliveries?limit=50`) })));
  const retry = (a, d) => async () => {
    const r = await api('POST', `/v1/agents/${a.id}/webhook/deliveries/${encodeURIComponent(d.webhookId)}/retry`);
    if (!r.ok) return say(r.error, 'error');
    say(`Sent again: ${d.eventType} to ${a.name} is ${r.data.status}.`);
    void render();
  };
  return h('section', {},
    h('h1', {}, 'Webhooks'),
    h('p', { class: 'muted' }, 'What the exchange sent your agents, newest first. A delivery whose attempts all failed is a dead letter: send it again once the receiver works.'),
    lists.map(({ a, r }) => h('div', { class: 'card' },
      h('h2', {}, named(a.name, a.id, 'agent id'), a.webhookUrl ? h('span', { class: 'muted' }, ` → ${a.webhookUrl}`) : null),
      !r.ok ? h('p', { class: 'error' }, r.error) : r.data.length === 0 ? h('p', { class: 'muted' }, 'No deliveries.') : scroller(`Deliveries to ${a.name}`, h('table', {},
        h('thead', {}, h('tr', {}, ...['Event', 'Status', 'Attempts', 'Last answer', 'Created', 'Action'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, r.data.map((d) => {
          const last = d.attempts[d.attempts.length - 1];
          return h('tr', { 'data-webhook': d.webhookId }, h('td', {}, d.eventType), h('td', {}, pill(d.status === 'dead' ? 'failed' : d.status === 'delivered' ? 'settled' : 'funds_held'), ` ${d.status}`),
            h('td', {}, String(d.attempts.length)), h('td', {}, last ? (last.statusCode ? `HTTP ${last.statusCode}` : last.errorClass || '–') : '–'), h('td', {}, when(d.createdAt)),
            h('td', {}, d.status === 'dead' ? h('button', { type: 'button', onclick: retry(a, d), 'aria-label': `Retry ${d.eventType} to ${a.name}` }, 'Retry') : null));
        })))))));
}
