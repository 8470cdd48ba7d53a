import { api } from '../api.js';
import { bars, lineChart, sizeBars } from '../charts.js';
import { h } from '../elements.js';
import { short, usd } from '../format.js';
import { state } from '../session.js';

// The agents' wallets, with the balance over time, and spending by category.

export async function walletsPage() {
  const account = state.session.accountId;
  const [agents, spent] = await Promise.all([api('GET', `/v1/accounts/${account}/agents?limit=100`), api('GET', `/v1/accounts/${account}/spending?days=30`)]);
  if (!agents.ok) return h('p', { class: 'error' }, agents.error);
  const cards = await Promise.all(agents.data.map(async (a) => {
    const [w, ledger] = await Promise.all([api('GET', `/v1/wallets/${a.id}`), api('GET', `/v1/wallets/${a.id}/transactions?limit=100`)]);
    if (!w.ok) return h('div', { class: 'card' }, h('h2', {}, a.name), h('p', { class: 'error' }, w.error));
    const points = ledger.ok ? ledger.data.map((e) => [Date.parse(e.createdAt), e.balanceAfterCents]).sort((x, y) => x[0] - y[0]) : [];
    return h('div', { class: 'card', 'data-wallet': a.id },
      h('h2', {}, `${a.name} (${short(a.id)})`),
      h('dl', { class: 'facts' }, h('dt', {}, 'Balance'), h('dd', {}, usd(w.data.balanceCents)), h('dt', {}, 'Held'), h('dd', {}, usd(w.data.heldCents)), h('dt', {}, 'Available'), h('dd', {}, usd(w.data.availableCents))),
      h('h3', {}, 'Balance over time'), lineChart(points, `Balance of ${a.name}`, usd));
  }));
  const section = h('section', {},
    h('h1', {}, 'Wallets'),
    h('h2', {}, 'Spending by category, last 30 days'),
    spent.ok && spent.data.categories.length ? bars(spent.data.categories.map((c) => [`${c.category} (${c.purchases})`, c.settledCents + c.heldCents]), usd, 'spending') : h('p', { class: 'muted' }, 'Nothing bought in the last 30 days.'),
    cards);
  sizeBars(section);
  return section;
}
