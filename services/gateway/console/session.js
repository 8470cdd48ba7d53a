// The console's session as the gateway gave it (kind, agent, account, CSRF token); null when signed out.
export const state = { session: null };
