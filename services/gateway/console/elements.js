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
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

export const pill = (status) => h('span', { class: `pill ${status}` }, status.replace(/_/g, ' '));

/**
 * D23.2: a thing by its name, its id on hover (`title`) and behind a copy button — a person reads
 * names; the id is there for whoever needs it.
 */
export function named(name, id, what = 'id') {
  if (!id) return h('span', {}, name ?? '–');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(id);
      say(`Copied the ${what} of ${name}.`);
    } catch {
      say(`The browser did not allow copying; the ${what} of ${name} is ${id}.`, 'error');
    }
  };
  return h('span', { class: 'named' }, h('span', { title: id }, name ?? id),
    h('button', { type: 'button', class: 'copy', onclick: copy, title: `Copy ${id}`, 'aria-label': `Copy the ${what} of ${name ?? id}` }, 'copy'));
}

/** A wide table in a region of its own that scrolls sideways on a narrow screen (the page itself does not). */
export const scroller = (label, table) => h('div', { class: 'scroll', role: 'region', 'aria-label': label, tabindex: 0 }, table);

/** The page the notice was said on: a notice belongs to it and goes when the person moves on. */
let saidOn = null;

/** A notice of what an action did, until dismissed or another page is shown. */
export function say(message, kind = 'done') {
  const box = document.getElementById('status');
  saidOn = location.hash;
  box.replaceChildren(h('div', { class: `notice ${kind}` }, h('span', {}, message),
    h('button', { type: 'button', class: 'dismiss', 'aria-label': 'Dismiss this notice', onclick: () => box.replaceChildren() }, '×')));
}

/** Clears a notice said on another page (app.js, on every page shown). */
export function forgetNoticeOf(hash) {
  if (saidOn !== hash) document.getElementById('status').replaceChildren();
}
