// Moving between pages: app.js routes each hash to its page; the pages only ask for a page again.

let renderPage = async () => {};

/** Sets what renders the page of the current hash (app.js's router). */
export function routeWith(renderer) {
  renderPage = renderer;
}

/** Renders the page of the current hash again (once an action changed what it shows). */
export const render = () => renderPage();

/** Goes to the page of `hash`; already there, renders it again. */
export function go(hash) {
  if (location.hash === hash) void render();
  else location.hash = hash;
}
