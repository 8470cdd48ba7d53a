import { describe, expect, it } from 'vitest';
import { AppError, catalogOps, closestName, CreateAccountBody, ERROR_CODES, ERROR_STATUS, identityOps, PageQuery, Type, validator, walletOps } from '../src/index.js';

describe('D1.3 validation entries', () => {
  const check = validator(CreateAccountBody);

  it('returns the typed value when valid', () => {
    const r = check.check({ accountType: 'individual', email: 'a@b.c', displayName: 'A', agent: { name: 'x' } });
    expect(r.ok).toBe(true);
  });

  it('names missing and unknown properties in the pointer, one entry per violation', () => {
    const r = check.check({ accountType: 'individual', displayName: 'A', agent: { name: 'x', extra: 1 }, more: true }, '/body');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => [e.code, e.field]).sort()).toEqual([
      ['VALIDATION_ERROR', '/body/agent/extra'],
      ['VALIDATION_ERROR', '/body/email'],
      ['VALIDATION_ERROR', '/body/more'],
    ]);
    expect(r.errors.find((e) => e.field === '/body/email')!.message).toBe('The property "email" is required.');
    expect(r.errors.every((e) => /^[A-Z].*\.$/.test(e.message))).toBe(true);
  });

  it('escapes JSON Pointer characters in property names', () => {
    const r = check.check({ accountType: 'individual', email: 'a@b.c', displayName: 'A', agent: { name: 'x' }, 'a/b~c': 1 });
    expect(!r.ok && r.errors[0]!.field).toBe('/a~1b~0c');
  });

  it('caps the entries at 20', () => {
    const many = validator(Type.Object(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`p${i}`, Type.String()]))));
    const r = many.check({});
    expect(!r.ok && r.errors).toHaveLength(20);
  });

  it('coerces query strings only when asked, and applies defaults', () => {
    const q = validator(PageQuery, { coerce: true });
    expect(q.check({ limit: '5' })).toEqual({ ok: true, value: { limit: 5, offset: 0 } });
    expect(validator(PageQuery).check({ limit: '5' }).ok).toBe(false);
    const r = q.check({ limit: '0' }, '/query');
    expect(!r.ok && r.errors[0]!.field).toBe('/query/limit');
  });

  it('parse throws an AppError carrying every entry', () => {
    try {
      validator(CreateAccountBody).parse({}, '/body');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).status).toBe(400);
      expect((err as AppError).entries.length).toBe(4);
    }
  });
});

describe('D1.4 error codes', () => {
  it('gives every code its status', () => {
    expect(ERROR_STATUS).toMatchObject({
      VALIDATION_ERROR: 400, INVALID_JSON: 400, UNAUTHENTICATED: 401, SIGNATURE_REQUIRED: 401, INSUFFICIENT_FUNDS: 402,
      FORBIDDEN: 403, AGENT_INACTIVE: 403, NOT_FOUND: 404, METHOD_NOT_ALLOWED: 405, INVALID_STATE: 409, CONFLICT: 409,
      PAYLOAD_TOO_LARGE: 413, UNSUPPORTED_MEDIA_TYPE: 415, IDEMPOTENCY_KEY_REUSED: 422, RATE_LIMITED: 429,
      INTERNAL_ERROR: 500, PAYMENTS_NOT_CONFIGURED: 501, RATE_LIMITER_UNAVAILABLE: 503, SERVICE_UNAVAILABLE: 503,
    });
    expect(ERROR_CODES.every((c) => /^[A-Z][A-Z_]+$/.test(c))).toBe(true);
  });
});

describe('request bounds every contract enforces', () => {
  it('bounds free-form objects by their size as JSON (maxJsonBytes), naming the field', () => {
    const check = validator(CreateAccountBody);
    const body = { accountType: 'individual', email: 'a@b.c', displayName: 'A', agent: { name: 'x' } };
    expect(check.check({ ...body, metadata: { note: 'x'.repeat(16_000) } }).ok).toBe(true);
    const r = check.check({ ...body, metadata: { note: 'x'.repeat(17_000) } }, '/body');
    expect(!r.ok && r.errors[0]).toMatchObject({ code: 'VALIDATION_ERROR', field: '/body/metadata', details: { keyword: 'maxJsonBytes', limit: 16_384 } });
  });

  it('gives every integer and number of every operation input a maximum within the safe range', () => {
    const unbounded: string[] = [];
    const walk = (schema: unknown, path: string) => {
      if (!schema || typeof schema !== 'object') return;
      const s = schema as Record<string, unknown>;
      if ((s.type === 'integer' || s.type === 'number') && !(typeof s.maximum === 'number' && s.maximum <= Number.MAX_SAFE_INTEGER)) unbounded.push(path);
      for (const [k, v] of Object.entries(s)) {
        if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}/${k}/${i}`));
        else if (typeof v === 'object') walk(v, `${path}/${k}`);
      }
    };
    for (const ops of [identityOps, walletOps, catalogOps]) for (const op of Object.values(ops)) walk(op.input, `${op.service}.${op.name}`);
    expect(unbounded).toEqual([]);
  });
});

describe('unknown properties name the closest allowed one', () => {
  it.each([
    ['nede', ['need', 'inputAvailable', 'maxBudgetCents'], 'need'],
    ['maxbudgetcents', ['need', 'maxBudgetCents'], 'maxBudgetCents'],
    ['inputAvailabel', ['need', 'inputAvailable'], 'inputAvailable'],
    ['colour', ['need', 'limit'], undefined],
  ])('%s among %j → %s', (name, allowed, expected) => {
    expect(closestName(name, allowed)).toBe(expected);
  });

  it('says "did you mean" in the message and lists the allowed properties in details', () => {
    const r = validator(CreateAccountBody).check({ accountType: 'individual', email: 'a@b.c', displayName: 'A', agent: { name: 'x' }, displayname: 'B' }, '/body');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors[0]).toMatchObject({
      code: 'VALIDATION_ERROR',
      field: '/body/displayname',
      message: 'Unknown property "displayname" is not allowed; did you mean "displayName"?',
      details: { didYouMean: 'displayName', allowedProperties: expect.arrayContaining(['accountType', 'email', 'displayName']) },
    });
  });
});

describe('D24.6 names are plain text', () => {
  const account = validator(CreateAccountBody);
  const body = (displayName: string, name = 'owner') => ({ accountType: 'individual', email: 'a@b.c', displayName, agent: { name } });

  it.each([
    ['\u202E', 'U+202E RIGHT-TO-LEFT OVERRIDE'],
    ['\u202A', 'U+202A LEFT-TO-RIGHT EMBEDDING'],
    ['\u2066', 'U+2066 LEFT-TO-RIGHT ISOLATE'],
    ['\u2069', 'U+2069 POP DIRECTIONAL ISOLATE'],
    ['\u200E', 'U+200E LEFT-TO-RIGHT MARK'],
    ['\u200F', 'U+200F RIGHT-TO-LEFT MARK'],
    ['\u061C', 'U+061C ARABIC LETTER MARK'],
    ['\u200B', 'U+200B ZERO WIDTH SPACE'],
    ['\u200D', 'U+200D ZERO WIDTH JOINER'],
    ['\u2060', 'U+2060 WORD JOINER'],
    ['\uFEFF', 'U+FEFF ZERO WIDTH NO-BREAK SPACE'],
    ['\u00AD', 'U+00AD SOFT HYPHEN'],
    ['\u{E0001}', 'U+E0001, an invisible format character'],
    ['\u0007', 'U+0007, a control character'],
  ])('D24.6: refuses %j in a name, naming the field and the character (%s)', (c, named) => {
    for (const [value, field] of [[body(`Acme${c}Corp`), '/body/displayName'], [body('Acme', `gpt${c}exe`), '/body/agent/name']] as const) {
      const r = account.check(value, '/body');
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.errors).toEqual([expect.objectContaining({ code: 'VALIDATION_ERROR', field, message: expect.stringContaining(`contains ${named}`) })]);
      expect(r.errors[0]!.message).toMatch(new RegExp(`^"${field.split('/').pop()}" contains`));
    }
  });

  it('D24.6: refuses a leading byte-order mark rather than trimming it away', () => {
    expect(account.check(body('\uFEFFAcme')).ok).toBe(false);
  });

  it('D24.6: removes leading and trailing spaces, and refuses a name of spaces alone', () => {
    const r = account.check(body('  Acme Corp  ', ' worker '));
    expect(r.ok && [r.value.displayName, r.value.agent.name]).toEqual(['Acme Corp', 'worker']);
    const blank = account.check(body('   '), '/body');
    expect(!blank.ok && blank.errors[0]).toMatchObject({ field: '/body/displayName', message: expect.stringContaining('must not be blank') });
  });

  it('D24.6: keeps letters of every script, and descriptions may hold format characters', () => {
    const r = account.check(body('שלום عالم 世界 Zoë'));
    expect(r.ok).toBe(true);
    const service = validator(catalogOps.createService.input.properties.body);
    const named = (name: string) => service.check({ name, description: 'An Arabic\u200F sentence, marks and all.', version: '1.0.0', category: 'text', inputSchema: {}, outputSchema: {}, pricing: { model: 'fixed', basePriceCents: 1 }, sla: { maxLatencyMs: 1, timeoutMs: 1, maxRetries: 0 } }, '/body');
    expect(named(' Digest ').ok).toBe(true);
    const refused = named('Dig\u202Eest');
    expect(!refused.ok && refused.errors.map((e) => e.field)).toEqual(['/body/name']);
  });
});
