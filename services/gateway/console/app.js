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

const OWNER_PAGES = [['#/approvals', 'Approvals'], ['#/purchases', 'Purchases']];
const OPERATOR_PAGES = [['#/operator/disputes', 'Escalated disputes'], ['#/operator/ledger', 'Ledger check']];

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
    else if (state.session.kind === 'operator' && hash === '#/operator/disputes') main.replaceChildren(await disputesPage());
    else if (state.session.kind === 'operator' && hash === '#/operator/ledger') main.replaceChildren(await ledgerPage());
    else return go(state.session.kind === 'owner' ? '#/approvals' : '#/operator/disputes');
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
        go(kind === 'owner' ? '#/approvals' : '#/operator/disputes');
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

async function purchasesPage() {
  const r = await api('GET', `/v1/accounts/${state.session.accountId}/transactions?limit=50`);
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  return h('section', {},
    h('h1', {}, 'Purchases'),
    r.data.length === 0 ? h('p', {}, 'Your agents have bought nothing yet.') : h('table', { id: 'purchases' },
      h('thead', {}, h('tr', {}, ...['Purchase', 'Agent', 'Status'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col', class: 'money' }, 'Price'), h('th', { scope: 'col' }, 'Updated'))),
      h('tbody', {}, r.data.map((t) => h('tr', {}, h('td', {}, h('a', { href: `#/purchases/${t.id}` }, short(t.id))), h('td', {}, short(t.consumerAgentId)), h('td', {}, pill(t.status)),
        h('td', { class: 'money' }, usd(t.agreedPriceCents)), h('td', {}, when(t.updatedAt)))))));
}

async function purchasePage(id) {
  const account = state.session.accountId;
  const r = await api('GET', `/v1/accounts/${account}/transactions/${id}`);
  if (!r.ok) return h('p', { class: 'error' }, r.error);
  const { transaction: t, negotiation, dispute } = r.data;
  const [ledger, hooks] = await Promise.all([
    api('GET', `/v1/wallets/${t.consumerAgentId}/transactions?limit=100`),
    api('GET', `/v1/agents/${t.consumerAgentId}/webhook/deliveries?limit=100`),
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
      events.push({ at: d.createdAt, text: `Webhook ${d.eventType} to the buyer: ${d.status}${d.attempts.length ? ` after ${d.attempts.length} attempt(s)` : ''}` });
    }
  }
  events.sort((a, b) => a.at.localeCompare(b.at));
  return h('section', {},
    h('h1', {}, `Purchase ${short(t.id)}`),
    h('div', { class: 'card' }, h('dl', { class: 'facts' },
      h('dt', {}, 'Status'), h('dd', { id: 'purchase-status' }, pill(t.status), t.statusReason ? ` ${t.statusReason}` : ''),
      h('dt', {}, 'Price'), h('dd', {}, `${usd(t.agreedPriceCents)} (fee ${usd(t.platformFeeCents)})`),
      h('dt', {}, 'Buying agent'), h('dd', {}, t.consumerAgentId),
      h('dt', {}, 'Provider'), h('dd', {}, t.providerAgentId),
      h('dt', {}, 'Service'), h('dd', {}, `${t.serviceId} (version ${t.serviceVersion})`))),
    h('h2', {}, 'Timeline'),
    h('ol', { class: 'timeline', id: 'timeline' }, events.map((e) => h('li', {}, h('time', { datetime: e.at }, when(e.at)), e.text))),
    h('p', {}, h('button', { type: 'button', class: 'secondary', onclick: () => render() }, 'Refresh')));
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
