import { h } from './elements.js';

// Charts drawn without inline styles (the CSP allows none): SVG, and bars sized through the DOM.

const SVG = 'http://www.w3.org/2000/svg';
const el = (tag, attrs, text) => {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
};

/**
 * An SVG line chart of `points` ([time in ms, value]) with its axes: times on x (`xTick` writes
 * them, `xLabel` says what they are), values on y (`format` writes them, `yLabel` names the unit).
 * Its figures are also in its accessible name.
 */
export function lineChart(points, label, format, { xLabel = 'Date', yLabel = 'US dollars', xTick } = {}) {
  if (points.length === 0) return h('p', { class: 'muted' }, `${label}: nothing yet.`);
  // Dates; within two days, with the time of day too.
  const span = points[points.length - 1][0] - points[0][0];
  xTick ??= (ms) => new Date(ms).toLocaleString(undefined, span < 2 * 86_400_000 ? { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' } : { month: 'short', day: 'numeric' });
  const W = 640, H = 220, L = 64, R = 16, T = 16, B = 48;
  const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)], [y0, y1] = [Math.min(0, ...ys), Math.max(1, ...ys)];
  const X = (x) => L + (x1 === x0 ? (W - L - R) / 2 : ((x - x0) / (x1 - x0)) * (W - L - R)), Y = (y) => H - B - ((y - y0) / (y1 - y0 || 1)) * (H - T - B);
  const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'chart',
    'aria-label': `${label}: from ${format(points[0][1])} on ${xTick(x0)} to ${format(points[points.length - 1][1])} on ${xTick(x1)}; highest ${format(Math.max(...ys))}` });
  // y: three values with their grid lines; x: the first, middle and last times.
  for (const v of [y0, (y0 + y1) / 2, y1]) {
    svg.append(el('line', { x1: L, x2: W - R, y1: Y(v), y2: Y(v), class: 'grid' }), el('text', { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end', class: 'tick' }, format(Math.round(v))));
  }
  // Within a minute, one time says it all.
  const times = x1 - x0 < 60_000 ? [x0] : [x0, (x0 + x1) / 2, x1];
  for (const t of times) svg.append(el('text', { x: X(t), y: H - B + 16, 'text-anchor': x1 === x0 ? 'middle' : t === x0 ? 'start' : t === x1 ? 'end' : 'middle', class: 'tick' }, xTick(t)));
  svg.append(
    el('line', { x1: L, x2: W - R, y1: Y(0), y2: Y(0), class: 'axis' }),
    el('line', { x1: L, x2: L, y1: T, y2: H - B, class: 'axis' }),
    el('polyline', { points: points.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' '), class: 'line' }),
    el('text', { x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle', class: 'axis-label' }, xLabel),
    el('text', { x: 14, y: (T + H - B) / 2, 'text-anchor': 'middle', transform: `rotate(-90 14 ${(T + H - B) / 2})`, class: 'axis-label' }, yLabel));
  return svg;
}

/** A bar per entry ([label, value, what the value is in words]), as a list the eye and a screen reader both read. */
export function bars(entries, id) {
  const max = Math.max(1, ...entries.map((e) => e[1]));
  return h('ul', { class: 'bars', id }, entries.map(([label, value, text]) => h('li', {}, h('span', { class: 'bar-label' }, label),
    h('span', { class: 'bar', 'data-width': Math.round((value / max) * 100) }), h('span', { class: 'bar-value' }, text))));
}

/** Sets each bar's width from its data (a CSP without inline styles: set through the DOM, not markup). */
export function sizeBars(root) {
  for (const b of root.querySelectorAll('.bar[data-width]')) b.style.width = `${b.dataset.width}%`;
}
