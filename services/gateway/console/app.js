// The Agent Exchange console (docs/console.md): one page, no build step, no dependencies. It signs in
// once (the owner agent's API key or the operator token, traded for an HttpOnly session cookie), then
// calls the exchange's own API routes with that cookie and the session's CSRF token, so it can do
// exactly what the API lets the signed-in owner or operator do. Every text from the exchange is put
// in the page as text (never as HTML). This module routes each hash to its page (pages/*.js) and
// starts; the modules beside it are what the pages share.

import { api } from './api.js';
import { agentsById } from './directory.js';
import { forgetNoticeOf, h } from './elements.js';
import { go, routeWith } from './navigation.js';
import { state } from './session.js';
import { agentsPage } from './pages/agents.js';
import { approvalsPage } from './pages/approvals.js';
import { ownerDisputesPage } from './pages/disputes.js';
import { auditPage, deadLettersPage, escalatedDisputesPage, figuresPage, ledgerPage, suspendPage } from './pages/operator.js';
import { purchasePage, purchasesPage } from './pages/purchases.js';
import { sessionPage, sessionsPage } from './pages/sessions.js';
import { salesPage } from './pages/sales.js';
import { signInPage, signOut } from './pages/sign-in.js';
import { walletsPage } from './pages/wallets.js';
import { webhooksPage } from './pages/webhooks.js';

const OWNER_PAGES = [['#/approvals', 'Approvals'], ['#/purchases', 'Purchases'], ['#/sessions', 'Sessions'], ['#/sales', 'Services and sales'], ['#/disputes', 'Disputes'], ['#/agents', 'Agents and rules'], ['#/wallets', 'Wallets'], ['#/webhooks', 'Webhooks']];
const OPERATOR_PAGES = [['#/operator/figures', 'Figures'], ['#/operator/disputes', 'Escalated disputes'], ['#/operator/dead-letters', 'Dead letters'], ['#/operator/agents', 'Suspend'], ['#/operator/audit', 'Audit log'], ['#/operator/ledger', 'Ledger check']];

function chrome() {
  const nav = document.getElementById('nav');
  const who = document.getElementById('who');
  const pages = !state.session ? [] : state.session.kind === 'owner' ? OWNER_PAGES : OPERATOR_PAGES;
  nav.replaceChildren(...pages.map(([href, label]) => h('a', { href, 'aria-current': location.hash.startsWith(href) ? 'page' : null }, label)));
  who.replaceChildren(...(state.session
    ? [h('span', { title: state.session.agentId ?? null }, state.session.kind === 'owner' ? `Signed in as ${state.agents?.get(state.session.agentId)?.name ?? 'the owner agent'}` : 'Operator'), h('button', { type: 'button', class: 'secondary', id: 'signout', onclick: signOut }, 'Sign out')]
    : []));
}

async function render() {
  const main = document.getElementById('page');
  const hash = location.hash || '#/';
  if (!state.session && hash !== '#/signin') return go('#/signin');
  forgetNoticeOf(location.hash);
  // D23.2: the account's agents by name, for every page (and the bar: who is signed in).
  if (state.session && state.session.kind === 'owner') await agentsById();
  chrome();
  main.setAttribute('aria-busy', 'true');
  try {
    let m;
    if (hash === '#/signin') main.replaceChildren(signInPage());
    else if (!state.session) return go('#/signin');
    else if (state.session.kind === 'owner' && hash === '#/approvals') main.replaceChildren(await approvalsPage());
    else if (state.session.kind === 'owner' && (m = /^#\/purchases(?:\?(.*))?$/.exec(hash))) main.replaceChildren(await purchasesPage(new URLSearchParams(m[1] ?? '')));
    else if (state.session.kind === 'owner' && (m = /^#\/purchases\/([0-9a-f-]{36})$/.exec(hash))) main.replaceChildren(await purchasePage(m[1]));
    else if (state.session.kind === 'owner' && hash === '#/sessions') main.replaceChildren(await sessionsPage());
    else if (state.session.kind === 'owner' && (m = /^#\/sessions\/([0-9a-f-]{36})$/.exec(hash))) main.replaceChildren(await sessionPage(m[1]));
    else if (state.session.kind === 'owner' && hash === '#/sales') main.replaceChildren(await salesPage());
    else if (state.session.kind === 'owner' && hash === '#/disputes') main.replaceChildren(await ownerDisputesPage());
    else if (state.session.kind === 'owner' && hash === '#/agents') main.replaceChildren(await agentsPage());
    else if (state.session.kind === 'owner' && hash === '#/wallets') main.replaceChildren(await walletsPage());
    else if (state.session.kind === 'owner' && hash === '#/webhooks') main.replaceChildren(await webhooksPage());
    else if (state.session.kind === 'operator' && hash === '#/operator/disputes') main.replaceChildren(await escalatedDisputesPage());
    else if (state.session.kind === 'operator' && hash === '#/operator/figures') main.replaceChildren(await figuresPage());
    else if (state.session.kind === 'operator' && hash === '#/operator/dead-letters') main.replaceChildren(await deadLettersPage());
    else if (state.session.kind === 'operator' && hash === '#/operator/agents') main.replaceChildren(suspendPage());
    else if (state.session.kind === 'operator' && hash === '#/operator/audit') main.replaceChildren(await auditPage());
    else if (state.session.kind === 'operator' && hash === '#/operator/ledger') main.replaceChildren(await ledgerPage());
    else return go(state.session.kind === 'owner' ? '#/approvals' : '#/operator/figures');
  } finally {
    main.removeAttribute('aria-busy');
  }
  document.title = `${main.querySelector('h1')?.textContent ?? 'Console'} · Agent Exchange console`;
}

routeWith(render);

// --- start: an existing session (a reload) is read back with its CSRF token

window.addEventListener('hashchange', () => void render());
const existing = await api('GET', '/console/api/session');
state.session = existing.ok ? existing.data : null;
await render();
