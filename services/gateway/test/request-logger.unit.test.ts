import { describe, expect, it } from 'vitest';
import type { FastifyBaseLogger } from 'fastify';
import { requestLogger } from '../src/http/request-logger.js';

// Each request's logger: a pino child made only when the request logs at an enabled level.

const ORDER = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
type Line = Record<string, unknown> & { level: string; msg: unknown };

/** A logger shaped as pino's (level, isLevelEnabled, child with bindings), keeping its lines. */
function fakeLogger(level: string, bindings: Record<string, unknown> = {}, lines: Line[] = [], made = { children: 0 }) {
  const logger: Record<string, unknown> = {
    level,
    isLevelEnabled: (l: string) => ORDER.indexOf(l) >= ORDER.indexOf(logger.level as string),
    child: (more: Record<string, unknown>) => (made.children++, fakeLogger(logger.level as string, { ...bindings, ...more }, lines, made).logger),
    silent: () => undefined,
  };
  for (const l of ORDER) {
    logger[l] = (...args: unknown[]) => {
      if (!(logger.isLevelEnabled as (x: string) => boolean)(l)) return;
      const [first, second] = args;
      lines.push(typeof first === 'string' ? { ...bindings, level: l, msg: first } : first instanceof Error ? { ...bindings, err: first, level: l, msg: second } : { ...bindings, ...(first as object), level: l, msg: second });
    };
  }
  return { logger: logger as unknown as FastifyBaseLogger, lines, made };
}

function parentAt(level: string) {
  const { logger, lines, made } = fakeLogger(level);
  return { parent: logger, lines, children: () => made.children };
}

describe('a request’s logger', () => {
  it('makes no child while nothing is logged at an enabled level', () => {
    const { parent, lines, children } = parentAt('warn');
    const log = requestLogger(parent, { requestId: 'r-1' }, {});
    log.info('incoming request');
    log.debug({ x: 1 }, 'detail');
    log.trace('trace');
    expect([children(), lines]).toEqual([0, []]);
    expect(log.level).toBe('warn');
  });

  it('writes what the child would, its bindings included, and makes the child once', () => {
    const { parent, lines, children } = parentAt('info');
    const log = requestLogger(parent, { requestId: 'r-2' }, {});
    log.info({ route: '/v1/x' }, 'incoming request');
    log.error(new Error('boom'), 'failed');
    expect(children()).toBe(1);
    expect(lines.map((l) => [l.level, l.msg, l.requestId, l.route])).toEqual([['info', 'incoming request', 'r-2', '/v1/x'], ['error', 'failed', 'r-2', undefined]]);
    expect((lines[1]!.err as Error).message).toBe('boom');
    const nested = log.child({ step: 'auth' });
    nested.warn('refused');
    expect(lines.at(-1)).toMatchObject({ msg: 'refused', requestId: 'r-2', step: 'auth' });
  });

  it('takes a level of its own from then on, as a child does', () => {
    const { parent, lines } = parentAt('warn');
    const log = requestLogger(parent, { requestId: 'r-3' }, {});
    log.level = 'debug';
    log.debug('now shown');
    expect(log.level).toBe('debug');
    expect(parent.level).toBe('warn');
    expect(lines.map((l) => l.msg)).toEqual(['now shown']);
  });
});
