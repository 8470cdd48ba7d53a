/**
 * NATS_URL as connect options: one URL or several, comma-separated; credentials in a URL
 * (`nats://user:password@host:4222`, or `nats://token@host:4222`) become the connection's user and
 * password (or token), as the other NATS clients read them — nats.js itself ignores them. A NATS
 * account of the exchange's own is what keeps `<ns>.rpc.>` to its services (docs/deploy.md).
 */
export function natsServers(url: string): { servers: string[]; user?: string; pass?: string; token?: string } {
  const servers: string[] = [];
  let auth: { user?: string; pass?: string; token?: string } = {};
  for (const raw of url.split(',').map((u) => u.trim()).filter(Boolean)) {
    const parsed = /^([a-z]+:\/\/)?(?:([^@/]*)@)?(.+)$/i.exec(raw)!;
    const [, scheme = '', userinfo, hostport] = parsed;
    servers.push(`${scheme}${hostport}`);
    if (userinfo === undefined) continue;
    const colon = userinfo.indexOf(':');
    const found = colon < 0 ? { token: decodeURIComponent(userinfo) } : { user: decodeURIComponent(userinfo.slice(0, colon)), pass: decodeURIComponent(userinfo.slice(colon + 1)) };
    if (Object.keys(auth).length > 0 && JSON.stringify(auth) !== JSON.stringify(found)) throw new Error('NATS_URL: every server of the list must carry the same credentials');
    auth = found;
  }
  if (servers.length === 0) throw new Error('NATS_URL names no server');
  return { servers, ...auth };
}
