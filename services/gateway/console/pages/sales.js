import { api } from '../api.js';
import { agentName } from '../directory.js';
import { h, pill, scroller } from '../elements.js';
import { usd, when } from '../format.js';
import { state } from '../session.js';

// The services the account's agents offer, and their sales.

export async function salesPage() {
  const account = state.session.accountId;
  const sales = await api('GET', `/v1/accounts/${account}/transactions?role=provider&limit=100`);
  const services = (await Promise.all([...(state.agents?.values() ?? [])].map(async (a) => {
    const r = await api('GET', `/v1/services?agentId=${a.id}&limit=100`);
    return r.ok ? r.data.map((sv) => ({ ...sv, agentName: a.name })) : [];
  }))).flat();
  const sold = sales.ok ? sales.data : [];
  const of = (id) => sold.filter((t) => t.serviceId === id);
  return h('section', {},
    h('h1', {}, 'Services and sales'),
    services.length === 0 ? h('p', {}, 'Your agents offer no service.') : scroller('Services', h('table', { id: 'services' },
      h('thead', {}, h('tr', {}, ...['Service', 'Agent', 'Status'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'), h('th', { scope: 'col' }, 'Sales'), h('th', { scope: 'col', class: 'money' }, 'Settled'))),
      h('tbody', {}, services.map((sv) => h('tr', { 'data-service': sv.id }, h('td', {}, sv.name), h('td', {}, sv.agentName), h('td', {}, pill(sv.status)),
        h('td', { class: 'money' }, usd(sv.pricing.basePriceCents)), h('td', {}, String(of(sv.id).length)),
        h('td', { class: 'money' }, usd(of(sv.id).filter((t) => t.status === 'settled').reduce((n, t) => n + t.agreedPriceCents, 0)))))))),
    h('h2', {}, 'Recent sales'),
    sold.length === 0 ? h('p', { class: 'muted' }, 'No sale yet.') : scroller('Recent sales', h('table', { id: 'sales' },
      h('thead', {}, h('tr', {}, ...['Service sold', 'Sold by', 'Status'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'), h('th', { scope: 'col' }, 'Updated'))),
      h('tbody', {}, sold.map((t) => h('tr', { 'data-transaction': t.id }, h('td', {}, h('a', { href: `#/purchases/${t.id}`, title: t.id }, t.serviceName ?? 'a service')), h('td', {}, agentName(t.providerAgentId)), h('td', {}, pill(t.status)),
        h('td', { class: 'money' }, usd(t.agreedPriceCents)), h('td', {}, when(t.updatedAt))))))));
}
