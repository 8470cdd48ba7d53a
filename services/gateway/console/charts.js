import { h } from './elements.js';

// Charts drawn without inline styles (the CSP allows none): SVG, and bars sized through the DOM.

/** An SVG line chart of `points` ([time, value]), with its figures also given as text for screen readers. */
export function lineChart(points, label, format) {
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
export function bars(entries, format, id) {
  const max = Math.max(1, ...entries.map((e) => e[1]));
  return h('ul', { class: 'bars', id }, entries.map(([label, value]) => h('li', {}, h('span', { class: 'bar-label' }, label),
    h('span', { class: 'bar', 'data-width': Math.round((value / max) * 100) }), h('span', { class: 'bar-value' }, format(value)))));
}

/** Sets each bar's width from its data (a CSP without inline styles: set through the DOM, not markup). */
export function sizeBars(root) {
  for (const b of root.querySelectorAll('.bar[data-width]')) b.style.width = `${b.dataset.width}%`;
}
