import { describe, expect, it } from 'vitest';
import { natsServers } from '../src/bus/nats-servers.js';

// NATS_URL with credentials (a NATS account of the exchange's own keeps <ns>.rpc.> to it).
describe('NATS_URL as connect options', () => {
  it.each([
    ['nats://127.0.0.1:4222', { servers: ['nats://127.0.0.1:4222'] }],
    ['nats://a:4222,nats://b:4222', { servers: ['nats://a:4222', 'nats://b:4222'] }],
    ['127.0.0.1:4222', { servers: ['127.0.0.1:4222'] }],
    ['nats://exchange:s%40cret@nats:4222', { servers: ['nats://nats:4222'], user: 'exchange', pass: 's@cret' }],
    ['tls://t0ken@nats.example.net:4222', { servers: ['tls://nats.example.net:4222'], token: 't0ken' }],
    ['nats://u:p@a:4222, nats://u:p@b:4222', { servers: ['nats://a:4222', 'nats://b:4222'], user: 'u', pass: 'p' }],
    ['nats://u:p@a:4222,nats://b:4222', { servers: ['nats://a:4222', 'nats://b:4222'], user: 'u', pass: 'p' }],
  ])('%s', (url, expected) => {
    expect(natsServers(url)).toEqual(expected);
  });

  it('refuses servers with different credentials, and a list of none', () => {
    expect(() => natsServers('nats://u:p@a:4222,nats://v:q@b:4222')).toThrow(/same credentials/);
    expect(() => natsServers(' , ')).toThrow(/names no server/);
  });
});
