import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@aex/platform';
import { processorFor, SandboxProcessor } from '../src/payments/processor.js';
import { StripeProcessor } from '../src/payments/stripe.js';

// D13.7 / D16: PAYMENTS_PROVIDER chooses the processor; Stripe's secrets are checked where they are
// used (the wallet), and a missing or malformed one stops the start naming the variable.

const config = (env: Record<string, string>) => loadConfig({}, env);

describe('the payment processor a configuration names', () => {
  it('is none, the sandbox, or Stripe with its secrets (and another API address when given)', () => {
    expect(processorFor(config({}))).toBeNull();
    expect(processorFor(config({ PAYMENTS_PROVIDER: 'sandbox' }))).toBeInstanceOf(SandboxProcessor);
    const stripe = processorFor(config({ PAYMENTS_PROVIDER: 'stripe', STRIPE_API_KEY: 'sk_test_abc', STRIPE_WEBHOOK_SECRET: 'whsec_abc', STRIPE_API_URL: 'http://127.0.0.1:12111' }));
    expect(stripe).toBeInstanceOf(StripeProcessor);
    expect(stripe!.name).toBe('stripe');
  });

  it('stops the start naming a missing secret, and loading naming a malformed one', () => {
    expect(() => processorFor(config({ PAYMENTS_PROVIDER: 'stripe', STRIPE_WEBHOOK_SECRET: 'whsec_abc' }))).toThrow(new ConfigError('STRIPE_API_KEY', 'must be set when PAYMENTS_PROVIDER is stripe.'));
    expect(() => processorFor(config({ PAYMENTS_PROVIDER: 'stripe', STRIPE_API_KEY: 'rk_live_abc' }))).toThrow(/STRIPE_WEBHOOK_SECRET must be set/);
    expect(() => config({ STRIPE_API_KEY: 'pk_live_abc' })).toThrow(/STRIPE_API_KEY is invalid/);
    expect(() => config({ STRIPE_WEBHOOK_SECRET: 'secret' })).toThrow(/STRIPE_WEBHOOK_SECRET is invalid/);
    expect(() => config({ PAYMENTS_PROVIDER: 'paypal' })).toThrow(/PAYMENTS_PROVIDER is invalid/);
  });

  it('never shows a secret in the error about another setting', () => {
    let message = '';
    try {
      config({ STRIPE_API_KEY: 'sk_live_verysecret', STRIPE_API_URL: 'ftp://nope' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/STRIPE_API_URL/);
    expect(message).not.toContain('verysecret');
  });
});
