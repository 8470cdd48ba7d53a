// Building the page: every text from the exchange goes in as text, never as HTML.

/** Builds an element: attributes (on* handlers, `class`, booleans) and children (strings become text). */
export function h(tag, attrs = {}, ...children) {
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

export const pill = (status) => h('span', { class: `pill ${status}` }, status.replace(/_/g, ' '));

export function say(message, kind = 'done') {
  const box = document.getElementById('status');
  box.replaceChildren(h('span', { class: kind }, message));
}
