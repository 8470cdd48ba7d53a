import { api } from '../api.js';
import { h, say } from '../elements.js';
import { go } from '../navigation.js';
import { state } from '../session.js';

export function signInPage() {
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
