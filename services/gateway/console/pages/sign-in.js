import { api } from '../api.js';
import { h, say } from '../elements.js';
import { go } from '../navigation.js';
import { state } from '../session.js';

// D23.4: a sign-in link (`aex console`) carries a one-time token in the address's fragment
// (`#/signin?link=…`), which the browser sends to no server: it reaches no log and no Referer. Before
// the console starts, the token is taken out of the address and traded for a session; the console
// then opens on the approvals, or — a link used or expired — on this page, saying so.
let linkProblem = await signInWithLink();

async function signInWithLink() {
  const token = /^#\/signin\?(?:.*&)?link=([A-Za-z0-9_-]+)/.exec(location.hash)?.[1];
  if (!token) return null;
  const at = (hash) => history.replaceState(null, '', `${location.pathname}${location.search}${hash}`);
  at('#/signin');
  const r = await api('POST', '/console/api/session', { link: token });
  if (!r.ok) return r.error;
  state.session = r.data;
  at('#/approvals');
  return null;
}

export function signInPage() {
  if (linkProblem) say(linkProblem, 'error');
  linkProblem = null;
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

export async function signOut() {
  const r = await api('DELETE', '/console/api/session');
  state.session = null;
  say(r.ok ? 'Signed out.' : r.error, r.ok ? 'done' : 'error');
  go('#/signin');
}
