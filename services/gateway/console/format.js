// Figures, times and ids as the console shows them.

export const usd = (cents) => (cents === null || cents === undefined ? '–' : `${cents < 0 ? '−' : ''}$${(Math.abs(cents) / 100).toFixed(2)}`);
export const when = (iso) => (iso ? new Date(iso).toLocaleString() : '–');
export const short = (id) => (id ? id.slice(0, 8) : '–');

/** D10.3: the rule a purchase's price broke, in words. */
export const approvalReason = (a) => (!a || !a.rule ? '–' : a.rule === 'requireHumanApprovalAboveCents' ? `above ${usd(a.limit)}` : `not below ${usd(a.limit)}`);
