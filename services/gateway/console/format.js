// Figures, times and ids as the console shows them.

export const usd = (cents) => (cents === null || cents === undefined ? '–' : `${cents < 0 ? '−' : ''}$${(Math.abs(cents) / 100).toFixed(2)}`);
/** A moment in the reader's locale, with its time zone: "Nov 30, 2026, 09:38:34 UTC". */
export const when = (iso) => (iso ? new Date(iso).toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short' }) : '–');
export const day = (ms) => new Date(ms).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
export const short = (id) => (id ? id.slice(0, 8) : '–');
export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** D23.2: what a purchase is, in words: "Text summariser from Acme" (ids only while the names are not known). */
export const bought = (t) => `${t.serviceName ?? `service ${short(t.serviceId)}`} from ${t.providerName ?? `provider ${short(t.providerAgentId)}`}`;

/** D10.3: the rule a purchase's price broke, in words. */
export const approvalReason = (a) => (!a || !a.rule ? '–' : a.rule === 'requireHumanApprovalAboveCents' ? `above the ${usd(a.limit)} that needs your approval` : `not below the ${usd(a.limit)} that goes through alone`);
