import { api } from '../api.js';
import { bars, lineChart, sizeBars } from '../charts.js';
import { h, named } from '../elements.js';
import { plural, usd } from '../format.js';
import { state } from '../session.js';

// The agents' wallets, with the balance over time, and spending by category.

export async function walletsPage() {
  const account = state.session.accountId;
  const spent = await api('GET', `/v1/accounts/${account}/spending?days=30`);
  const agents = [...(state.agents?.values() ?? [])];
  const cards = await Promise.all(agents.map(async (a) => {
    const [w, ledger] = await Promise.all([api('GET', `/v1/wallets/${a.id}`), api('GET', `/v1/wallets/${a.id}/transactions?limit=100`)]);
    if (!w.ok) return h('div', { class: 'card' }, h('h2', {}, a.name), h('p', { class: 'error' }, w.error));
    const points = ledger.ok ? ledger.data.map((e) => [Date.parse(e.createdAt), e.balanceAfterCents]).sort((x, y) => x[0] - y[0]) : [];
    return h('div', { class: 'card', 'data-wallet': a.id },
      h('h2', {}, named(a.name, a.id, 'agent id')),
      h('dl', { class: 'facts' }, h('dt', {}, 'Balance'), h('dd', {}, usd(w.data.balanceCents)), h('dt', {}, 'Held'), h('dd', {}, usd(w.data.heldCents)), h('dt', {}, 'Available'), h('dd', {}, usd(w.data.availableCents))),
      h('h3', {}, 'Balance over time'), lineChart(points, `Balance of ${a.name}`, usd, { xLabel: 'Date', yLabel: 'Balance (US dollars)' }));
  }));
  const categories = spent.ok ? spent.data.categories : [];
  const section = h('section', {},
    h('h1', {}, 'Wallets'),
    h('h2', {}, 'Spending by category, last 30 days'),
    categories.length ? [h('p', { class: 'muted' }, 'Purchases whose price was held, and what they cost (settled or still held).'),
      bars(categories.map((c) => [c.category, c.settledCents + c.heldCents, `${plural(c.purchases, 'purchase')} · ${usd(c.settledCents + c.heldCents)}`]), 'spending')]
      : h('p', { class: 'muted' }, 'Nothing bought in the last 30 days.'),
    cards);
  sizeBars(section);
  return section;
}
