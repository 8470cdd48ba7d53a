// The Agent Exchange console (docs/console.md): one page, no build step, no dependencies. It signs in
// once (the owner agent's API key or the operator token, traded for an HttpOnly session cookie), then
// calls the exchange's own API routes with that cookie and the session's CSRF token, so it can do
// exactly what the API lets the signed-in owner or operator do. Every text from the exchange is put
// in the page as text (never as HTML).

const state = { session: null };

/** Builds an element: attributes (on* handlers, `class`, booleans) and children (strings become text). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

const usd = (cents) => (cents === null || cents === undefined ? '–' : `${cents < 0 ? '−' : ''}$${(Math.abs(cents) / 100).toFixed(2)}`);
const when = (iso) => (iso ? new Date(iso).toLocaleString() : '–');
const short = (id) => (id ? id.slice(0, 8) : '–');
const pill = (status) => h('span', { class: `pill ${status}` }, status.replace(/_/g, ' '));

function say(message, kind = 'done') {
  const box = document.getElementById('status');
  box.replaceChildren(h('span', { class: kind }, message));
}

/** One call of the exchange's API with the session: `{ ok, status, data, error }`. */
async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && state.session) headers['x-csrf-token'] = state.session.csrfToken;
  let res;
  try {
    res = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    return { ok: false, status: 0, error: 'The exchange could not be reached.' };
  }
  const json = await res.json().catch(() => null);
  if (res.ok && json && !(json.errors && json.errors.length)) return { ok: true, status: res.status, data: json.data, pagination: json.meta && json.meta.pagination };
  const first = json && json.errors && json.errors[0];
  if (res.status === 401 && state.session) {
    state.session = null;
    go('#/signin');
  }
  return { ok: false, status: res.status, code: first && first.code, error: first ? `${first.code}: ${first.message}` : `HTTP ${res.status}` };
}

// --- routing

const OWNER_PAGES = [['#/approvals', 'Approvals'], ['#/purchases', 'Purchases'], ['#/sales', 'Services and sales'], ['#/disputes', 'Disputes'], ['#/agents', 'Agents and rules'], ['#/wallets', 'Wallets'], ['#/webhooks', 'Webhooks']];
const OPERATOR_PAGES = [['#/operator/figures', 'Figures'], ['#/operator/disputes', 'Escalated disputes'], ['#/operator/dead-letters', 'Dead letters'], ['#/operator/agents', 'Suspend'], ['#/operator/audit', 'Audit log'], ['#/operator/ledger', 'Ledger check']];

function go(hash) {
  if (location.hash === hash) void render();
  else location.hash = hash;
}

function chrome() {
  const nav = document.getElementById('nav');
  const who = document.getElementById('who');
  const pages = !state.session ? [] : state.session.kind === 'owner' ? OWNER_PAGES : OPERATOR_PAGES;
  nav.replaceChildren(...pages.map(([href, label]) => h('a', { href, 'aria-current': location.hash.startsWith(href) ? 'page' : null }, label)));
  who.replaceChildren(...(state.session
    ? [h('span', {}, state.session.kind === 'owner' ? `Owner agent ${short(state.session.agentId)}` : 'Operator'), h('button', { type: 'button', class: 'secondary', id: 'signout', onclick: signOut }, 'Sign out')]
    : []));
}

async function render() {
  const main = document.getElementById('main');
  const hash = location.hash || '#/';
  if (!state.session && hash !== '#/signin') return go('#/signin');
  chrome();
  main.setAttribute('aria-busy', 'true');
  try {
    let m;
    if (hash === '#/signin') main.replaceChildren(signInPage());
    else if (!state.session) return go('#/signin');
    else if (state.session.kind === 'owner' && hash === '#/approvals') main.replaceChildren(await approvalsPage());
    else if (state.session.kind === 'owner' && hash === '#/purchases') main.replaceChildren(await purchasesPage());
    else if (state.session.kind === 'owner' && (m = /^#\/purchases\/([0-9a-f-]{36})$/.exec(hash))) main.replaceChildren(await purchasePage(m[1]));
    else if (state.session.kind === 'owner' && hash === '#/sales') main.replaceChildren(await salesPage());
    else if (state.session.kind === 'owner' && hash === '#/disputes') main.replaceChildren(await ownerDisputesPage());
    else if (state.session.kind === 'owner' && hash === '#/agents') main.replaceChildren(await agentsPage());
    else if (state.session.kind === 'owner' && hash === '#/wallets') main.replaceChildren(await walletsPage());
    else if (state.session.kind === 'owner' && hash === '#/webhooks') main.replaceChildren(await webhooksPage());
    else if (state.session.kind === 'operator' && hash === '#/operator/disputes') main.replaceChildren(await disputesPage());
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

// --- signing in and out

function signInPage() {
  const form = (id, label, field, help, kind) => {
    const input = h('input', { id: `${id}-input`, name: field, type: 'password', autocomplete: 'off', required: true, 'aria-describedby': `${id}-help` });
    return h('form', {
      class: 'card stack', id, 'aria-labelledby': `${id}-title`,
      onsubmit: async (e) => {
        e.preventDefault();
        const r = await api('POST', '/console/api/session', { [field]: input.value });
        input.value = '';
        if (!r.ok) return say(r.error, 'error');
        state.session = r.data;
        say(`Signed in as ${kind}.`);
        go(kind === 'owner' ? '#/approvals' : '#/operator/figures');
      },
    }, h('h2', { id: `${id}-title` }, label), h('label', { for: `${id}-input` }, field === 'apiKey' ? 'Owner agent API key' : 'Operator token'), input,
    h('p', { id: `${id}-help`, class: 'muted' }, help), h('button', { type: 'submit' }, 'Sign in'));
  };
  return h('section', {},
    h('h1', {}, 'Sign in'),
    h('div', { class: 'signin' },
      form('owner-signin', 'Account owner', 'apiKey', 'The API key of your account\'s owner agent (ae_live_…). It is sent once; the browser keeps only a session cookie.', 'owner'),
      form('operator-signin', 'Operator', 'operatorToken', 'The deployment\'s ADMIN_TOKEN.', 'operator')));
}

async function signOut() {
  const r = await api('DELETE', '/console/api/session');
  state.session = null;
  say(r.ok ? 'Signed out.' : r.error, r.ok ? 'done' : 'error');
  go('#/signin');
}

// --- owner: approvals

const why = (a) => (!a || !a.rule ? '–' : a.rule === 'requireHumanApprovalAboveCents' ? `above ${usd(a.limit)}` : `not below ${usd(a.limit)}`);

async function approvalsPage() {
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
      h('td', { class: 'money' }, usd(t.agreedPriceCents)), h('td', {}, why(t.approval)), h('td', {}, when(t.approval && t.approval.expiresAt)),
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

// --- owner: purchases and their timeline

const STATUSES = ['awaiting_approval', 'negotiating', 'funds_held', 'executing', 'delivered', 'disputed', 'settled', 'cancelled', 'expired', 'failed'];

async function purchasesPage() {
  const filter = new URLSearchParams(sessionStorage.getItem('aex.purchases.filter') ?? '');
  const query = new URLSearchParams({ limit: '50', ...(filter.get('status') ? { status: filter.get('status') } : {}), ...(filter.get('agentId') ? { agentId: filter.get('agentId') } : {}) });
  const [r, agents] = await Promise.all([api('GET', `/v1/accounts/${state.session.accountId}/transactions?${query}`), api('GET', `/v1/accounts/${state.session.accountId}/agents?limit=100`)]);
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  const status = h('select', { id: 'filter-status' }, h('option', { value: '' }, 'any'), STATUSES.map((st) => h('option', { value: st, selected: filter.get('status') === st }, st.replace(/_/g, ' '))));
  const agent = h('select', { id: 'filter-agent' }, h('option', { value: '' }, 'any'), (agents.ok ? agents.data : []).map((a) => h('option', { value: a.id, selected: filter.get('agentId') === a.id }, `${a.name} (${short(a.id)})`)));
  const filters = h('form', {
    class: 'actions card', id: 'filters',
    onsubmit: (e) => {
      e.preventDefault();
      sessionStorage.setItem('aex.purchases.filter', new URLSearchParams({ status: status.value, agentId: agent.value }).toString());
      void render();
    },
  }, h('label', { for: 'filter-status' }, 'Status'), status, h('label', { for: 'filter-agent' }, 'Agent'), agent, h('button', { type: 'submit' }, 'Filter'));
  return h('section', {},
    h('h1', {}, 'Purchases'),
    filters,
    r.data.length === 0 ? h('p', {}, 'No purchase matches.') : h('table', { id: 'purchases' },
      h('thead', {}, h('tr', {}, ...['Purchase', 'Agent', 'Status'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'), h('th', { scope: 'col' }, 'Updated'))),
      h('tbody', {}, r.data.map((t) => h('tr', {}, h('td', {}, h('a', { href: `#/purchases/${t.id}` }, short(t.id))), h('td', {}, short(t.consumerAgentId)), h('td', {}, pill(t.status)),
        h('td', { class: 'money' }, usd(t.agreedPriceCents)), h('td', {}, when(t.updatedAt)))))));
}

async function purchasePage(id) {
  const account = state.session.accountId;
  const r = await api('GET', `/v1/accounts/${account}/transactions/${id}`);
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  const { transaction: t, negotiation, dispute, roles } = r.data;
  // The account's own agent in it: the buyer of a purchase, the provider of a sale.
  const mine = roles.includes('consumer') ? t.consumerAgentId : t.providerAgentId;
  const [ledger, hooks] = await Promise.all([
    api('GET', `/v1/wallets/${mine}/transactions?limit=100`),
    api('GET', `/v1/agents/${mine}/webhook/deliveries?limit=100`),
  ]);
  const events = [['initiatedAt', 'Created'], ['fundsHeldAt', 'Price held in escrow'], ['deliveredAt', 'Delivered'], ['settledAt', 'Settled: the provider was paid']]
    .filter(([k]) => t[k]).map(([k, text]) => ({ at: t[k], text }));
  if (t.approval) {
    events.push({ at: t.approval.requestedAt, text: `Awaiting approval (${why(t.approval)})` });
    if (t.approval.decidedAt) events.push({ at: t.approval.decidedAt, text: `${t.approval.decision === 'denied' ? 'Denied' : 'Approved'} by ${short(t.approval.decidedBy)}${t.approval.reason ? `: ${t.approval.reason}` : ''}` });
  }
  for (const m of negotiation) events.push({ at: m.createdAt, text: `Negotiation, round ${m.round}: ${m.messageType.replace(/_/g, ' ')}${m.terms.priceCents ? ` at ${usd(m.terms.priceCents)}` : ''} by ${m.fromAgentId === t.consumerAgentId ? 'the buyer' : 'the provider'}` });
  if (dispute) events.push({ at: dispute.openedAt, text: `Disputed: ${dispute.reason.replace(/_/g, ' ')}` });
  if (dispute && dispute.resolvedAt) events.push({ at: dispute.resolvedAt, text: `Dispute resolved: ${dispute.outcome}` });
  if (ledger.ok) for (const e of ledger.data.filter((x) => x.transactionId === t.id)) events.push({ at: e.createdAt, text: `Ledger: ${e.txType.replace(/_/g, ' ')} ${usd(e.amountCents)}` });
  if (hooks.ok) {
    for (const d of hooks.data.filter((x) => x.payload && x.payload.data && x.payload.data.transactionId === t.id)) {
      events.push({ at: d.createdAt, text: `Webhook ${d.eventType} to ${mine === t.consumerAgentId ? 'the buyer' : 'the provider'}: ${d.status}${d.attempts.length ? ` after ${d.attempts.length} attempt(s)` : ''}` });
    }
  }
  events.sort((a, b) => a.at.localeCompare(b.at));
  return h('section', {},
    h('h1', {}, `${roles.includes('consumer') ? 'Purchase' : 'Sale'} ${short(t.id)}`),
    h('div', { class: 'card' }, h('dl', { class: 'facts' },
      h('dt', {}, 'Status'), h('dd', { id: 'purchase-status' }, pill(t.status), t.statusReason ? ` ${t.statusReason}` : ''),
      h('dt', {}, 'Price'), h('dd', {}, `${usd(t.agreedPriceCents)} (fee ${usd(t.platformFeeCents)})`),
      h('dt', {}, 'Buying agent'), h('dd', {}, t.consumerAgentId),
      h('dt', {}, 'Provider'), h('dd', {}, t.providerAgentId),
      h('dt', {}, 'Service'), h('dd', {}, `${t.serviceId} (version ${t.serviceVersion})`))),
    dispute ? disputeCard(dispute, roles) : null,
    h('h2', {}, 'Timeline'),
    h('ol', { class: 'timeline', id: 'timeline' }, events.map((e) => h('li', {}, h('time', { datetime: e.at }, when(e.at)), e.text))),
    h('p', {}, h('button', { type: 'button', class: 'secondary', onclick: () => render() }, 'Refresh')));
}

/** A dispute with what the account may do in it: respond for its provider, decide or withdraw for its buyer. */
function disputeCard(d, roles) {
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

async function ownerDisputesPage() {
  const account = state.session.accountId;
  const [bought, sold] = await Promise.all(['consumer', 'provider'].map((role) => api('GET', `/v1/accounts/${account}/transactions?role=${role}&status=disputed&limit=100`)));
  const rows = [...(bought.ok ? bought.data.map((t) => ['purchase', t]) : []), ...(sold.ok ? sold.data.map((t) => ['sale', t]) : [])];
  return h('section', {},
    h('h1', {}, 'Disputes'),
    h('p', { class: 'muted' }, 'Disputes of your agents\' purchases and sales still open. Open one to answer it for your provider, or to decide on a proposal for your buyer.'),
    rows.length === 0 ? h('p', { id: 'no-owner-disputes' }, 'No dispute is open.') : h('table', { id: 'owner-disputes' },
      h('thead', {}, h('tr', {}, ...['Transaction', 'Side', 'Status'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'))),
      h('tbody', {}, rows.map(([side, t]) => h('tr', { 'data-transaction': t.id }, h('td', {}, h('a', { href: `#/purchases/${t.id}` }, short(t.id))), h('td', {}, side), h('td', {}, pill(t.status)), h('td', { class: 'money' }, usd(t.agreedPriceCents)))))));
}

// --- owner: services and their sales

async function salesPage() {
  const account = state.session.accountId;
  const [agents, sales] = await Promise.all([api('GET', `/v1/accounts/${account}/agents?limit=100`), api('GET', `/v1/accounts/${account}/transactions?role=provider&limit=100`)]);
  if (!agents.ok) return h('p', { class: 'error' }, agents.error);
  const services = (await Promise.all(agents.data.map(async (a) => {
    const r = await api('GET', `/v1/services?agentId=${a.id}&limit=100`);
    return r.ok ? r.data.map((sv) => ({ ...sv, agentName: a.name })) : [];
  }))).flat();
  const sold = sales.ok ? sales.data : [];
  const of = (id) => sold.filter((t) => t.serviceId === id);
  return h('section', {},
    h('h1', {}, 'Services and sales'),
    services.length === 0 ? h('p', {}, 'Your agents offer no service.') : h('table', { id: 'services' },
      h('thead', {}, h('tr', {}, ...['Service', 'Agent', 'Status'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'), h('th', { scope: 'col' }, 'Sales'), h('th', { scope: 'col', class: 'money' }, 'Settled'))),
      h('tbody', {}, services.map((sv) => h('tr', { 'data-service': sv.id }, h('td', {}, sv.name), h('td', {}, sv.agentName), h('td', {}, pill(sv.status)),
        h('td', { class: 'money' }, usd(sv.pricing.basePriceCents)), h('td', {}, String(of(sv.id).length)),
        h('td', { class: 'money' }, usd(of(sv.id).filter((t) => t.status === 'settled').reduce((n, t) => n + t.agreedPriceCents, 0))))))),
    h('h2', {}, 'Recent sales'),
    sold.length === 0 ? h('p', { class: 'muted' }, 'No sale yet.') : h('table', { id: 'sales' },
      h('thead', {}, h('tr', {}, ...['Sale', 'Provider', 'Status'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'), h('th', { scope: 'col' }, 'Updated'))),
      h('tbody', {}, sold.map((t) => h('tr', {}, h('td', {}, h('a', { href: `#/purchases/${t.id}` }, short(t.id))), h('td', {}, short(t.providerAgentId)), h('td', {}, pill(t.status)),
        h('td', { class: 'money' }, usd(t.agreedPriceCents)), h('td', {}, when(t.updatedAt)))))));
}

// --- owner: agents, their keys and spending rules

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

async function agentsPage() {
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

// --- owner: wallets, with the balance over time and spending by category

/** An SVG line chart of `points` ([time, value]), with its figures also given as text for screen readers. */
function lineChart(points, label, format) {
  if (points.length === 0) return h('p', { class: 'muted' }, `${label}: nothing yet.`);
  const W = 640, H = 180, P = 28;
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `${label}: ${points.length ? `from ${format(points[0][1])} to ${format(points[points.length - 1][1])}` : 'no data'}`);
  svg.classList.add('chart');
  if (points.length > 0) {
    const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
    const [x0, x1] = [Math.min(...xs), Math.max(...xs) || 1], [y0, y1] = [Math.min(0, ...ys), Math.max(1, ...ys)];
    const X = (x) => P + ((x - x0) / (x1 - x0 || 1)) * (W - 2 * P), Y = (y) => H - P - ((y - y0) / (y1 - y0 || 1)) * (H - 2 * P);
    const line = document.createElementNS(svg.namespaceURI, 'polyline');
    line.setAttribute('points', points.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' '));
    line.setAttribute('class', 'line');
    const axis = document.createElementNS(svg.namespaceURI, 'line');
    for (const [k, v] of Object.entries({ x1: P, x2: W - P, y1: Y(0), y2: Y(0), class: 'axis' })) axis.setAttribute(k, String(v));
    const top = document.createElementNS(svg.namespaceURI, 'text');
    for (const [k, v] of Object.entries({ x: 2, y: 14, class: 'tick' })) top.setAttribute(k, String(v));
    top.textContent = format(y1);
    svg.append(axis, line, top);
  }
  return svg;
}

/** A bar per entry ([label, value]), as a list the eye and a screen reader both read. */
function bars(entries, format, id) {
  const max = Math.max(1, ...entries.map((e) => e[1]));
  return h('ul', { class: 'bars', id }, entries.map(([label, value]) => h('li', {}, h('span', { class: 'bar-label' }, label),
    h('span', { class: 'bar', 'data-width': Math.round((value / max) * 100) }), h('span', { class: 'bar-value' }, format(value)))));
}

/** Sets each bar's width from its data (a CSP without inline styles: set through the DOM, not markup). */
function sizeBars(root) {
  for (const b of root.querySelectorAll('.bar[data-width]')) b.style.width = `${b.dataset.width}%`;
}

async function walletsPage() {
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

// --- owner: webhook deliveries and dead letters

async function webhooksPage() {
  const agents = await api('GET', `/v1/accounts/${state.session.accountId}/agents?limit=100`);
  if (!agents.ok) return h('p', { class: 'error' }, agents.error);
  const lists = await Promise.all(agents.data.map(async (a) => ({ a, r: await api('GET', `/v1/agents/${a.id}/webhook/deliveries?limit=50`) })));
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
      h('h2', {}, `${a.name} (${short(a.id)})`, a.webhookUrl ? h('span', { class: 'muted' }, ` → ${a.webhookUrl}`) : null),
      !r.ok ? h('p', { class: 'error' }, r.error) : r.data.length === 0 ? h('p', { class: 'muted' }, 'No deliveries.') : h('table', {},
        h('thead', {}, h('tr', {}, ...['Event', 'Status', 'Attempts', 'Last answer', 'Created', ''].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, r.data.map((d) => {
          const last = d.attempts[d.attempts.length - 1];
          return h('tr', { 'data-webhook': d.webhookId }, h('td', {}, d.eventType), h('td', {}, pill(d.status === 'dead' ? 'failed' : d.status === 'delivered' ? 'settled' : 'funds_held'), ` ${d.status}`),
            h('td', {}, String(d.attempts.length)), h('td', {}, last ? (last.statusCode ? `HTTP ${last.statusCode}` : last.errorClass || '–') : '–'), h('td', {}, when(d.createdAt)),
            h('td', {}, d.status === 'dead' ? h('button', { type: 'button', onclick: retry(a, d), 'aria-label': `Retry ${d.eventType} to ${a.name}` }, 'Retry') : null));
        }))))));
}

// --- operator

const OUTCOMES = ['consumer_wins', 'provider_wins', 'partial_refund', 'provider_redo'];

async function disputesPage() {
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
    rows.length === 0 ? h('p', { id: 'no-disputes' }, 'No dispute waits for you.') : h('table', { id: 'disputes' },
      h('thead', {}, h('tr', {}, ...['Dispute', 'Purchase', 'Reason', 'Description', 'Deadline', 'Resolve'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows)));
}

async function figuresPage() {
  const r = await api('GET', '/admin/v1/figures?hours=24');
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  const f = r.data;
  const hourly = (k) => f.perHour.map((p) => [Date.parse(p.hour), p[k]]);
  const section = h('section', {},
    h('h1', {}, 'Figures'),
    h('div', { class: 'card' }, h('dl', { class: 'facts', id: 'figures' },
      h('dt', {}, 'Held in escrow now'), h('dd', {}, usd(f.heldCents)),
      h('dt', {}, 'Purchases, last 24 h'), h('dd', {}, String(f.purchases)),
      h('dt', {}, 'Settled, last 24 h'), h('dd', {}, usd(f.settledCents)),
      h('dt', {}, 'Fees earned, last 24 h'), h('dd', {}, usd(f.feesCents)))),
    h('h2', {}, 'Purchases per hour'), lineChart(hourly('purchases'), 'Purchases per hour', String),
    h('h2', {}, 'Volume settled per hour'), lineChart(hourly('volumeCents'), 'Volume settled per hour', usd),
    h('h2', {}, 'Fees per hour'), lineChart(hourly('feesCents'), 'Fees per hour', usd));
  return section;
}

async function deadLettersPage() {
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
    r.data.length === 0 ? h('p', { id: 'no-dead-letters' }, 'No webhook is dead-lettered.') : h('table', { id: 'dead-letters' },
      h('thead', {}, h('tr', {}, ...['Event', 'Agent', 'Attempts', 'Created', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, r.data.map((d) => h('tr', { 'data-webhook': d.webhookId }, h('td', {}, d.eventType), h('td', {}, short(d.agentId)), h('td', {}, String(d.attempts.length)), h('td', {}, when(d.createdAt)),
        h('td', {}, h('button', { type: 'button', onclick: retry(d), 'aria-label': `Retry ${d.eventType} to ${short(d.agentId)}` }, 'Retry')))))));
}

function suspendPage() {
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

async function auditPage() {
  const r = await api('GET', '/admin/v1/audit?limit=100');
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  return h('section', {},
    h('h1', {}, 'Audit log'),
    r.data.length === 0 ? h('p', {}, 'No operator action yet.') : h('table', { id: 'audit' },
      h('thead', {}, h('tr', {}, ...['When', 'Action', 'Target', 'Details'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, r.data.map((a) => h('tr', {}, h('td', {}, when(a.at)), h('td', {}, a.action), h('td', {}, a.target ? `${a.target.type} ${short(a.target.id)}` : '–'), h('td', {}, JSON.stringify(a.details)))))));
}

async function ledgerPage() {
  const r = await api('GET', '/admin/v1/ledger/check');
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  return h('section', {},
    h('h1', {}, 'Ledger check'),
    h('div', { class: 'card' }, h('p', { id: 'ledger-result' }, r.data.ok ? `OK: ${r.data.walletsChecked} wallets checked, every invariant holds.` : `${r.data.violations.length} violation(s) found.`),
      h('p', { class: 'muted' }, `Checked ${when(r.data.checkedAt)}.`)),
    r.data.violations.length ? h('table', {}, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Invariant'), h('th', { scope: 'col' }, 'Wallet'), h('th', { scope: 'col' }, 'Details'))),
      h('tbody', {}, r.data.violations.map((v) => h('tr', {}, h('td', {}, v.invariant), h('td', {}, v.walletId || '–'), h('td', {}, JSON.stringify(v.details)))))) : null);
}

// --- start: an existing session (a reload) is read back with its CSRF token

window.addEventListener('hashchange', () => void render());
const existing = await api('GET', '/console/api/session');
state.session = existing.ok ? existing.data : null;
await render();
