import http from 'node:http';

/**
 * The load generators' `fetch` (the client's `fetch` option): a request over node:http with
 * connections kept alive, answered as the few parts of a `Response` the client reads. The global
 * `fetch` builds WHATWG requests, responses and streams for every call: in the lifecycle bench the
 * load process spent about a third of the exchange's CPU on it, on the same two cores.
 */
export function keepAliveFetch(): typeof fetch {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  return ((input: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) => new Promise((resolve, reject) => {
    const req = http.request(input, { method: init.method ?? 'GET', headers: init.body === undefined ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) }, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        const status = res.statusCode ?? 0;
        const headers = new Headers(Object.entries(res.headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, Array.isArray(v) ? v.join(', ') : v] as [string, string]])));
        resolve({ status, ok: status >= 200 && status < 300, headers, text: async () => text } as Response);
      });
    });
    req.on('error', reject);
    req.end(init.body);
  })) as typeof fetch;
}
