import { describe, expect } from 'vitest';
import { cliTest } from './cli-test.js';

// Commander refuses what it can tell is wrong before any command runs: the message names the
// option or argument, "(add --help for usage)" follows, the exit code is 2 and nothing is sent.

describe('numbers', () => {
  cliTest('a whole-number option given a fraction is refused, naming the option', async ({ aex, exchange, profile: _ }) => {
    const r = await aex(['wallet', 'ledger', '--limit', '2.5']);
    expect(r).toEqual({ code: 2, stdout: '', stderr: "error: option '--limit <n>' argument '2.5' is invalid. --limit is a whole number.\n(add --help for usage)\n" });
    expect(exchange.requests).toEqual([]);
  });

  cliTest('a cents option given a negative amount is refused as not a whole number of cents', async ({ aex, exchange, profile: _ }) => {
    const r = await aex(['discover', 'count words', '--max-budget-cents=-5']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining("argument '-5' is invalid. --max-budget-cents is a whole number of cents.")]);
    expect(exchange.requests).toEqual([]);
  });

  cliTest('a number too large to count exactly is refused', async ({ aex, profile: _ }) => {
    const r = await aex(['tx', 'list', '--limit', '9007199254740993']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('--limit is a whole number.')]);
  });

  cliTest('an amount argument that is not whole cents ends with exit 2 before anything is sent', async ({ aex, exchange, profile: _ }) => {
    const r = await aex(['wallet', 'fund', '12.50']);
    expect(r.code).toBe(2);
    expect(exchange.requests).toEqual([]);
  });
});

describe('required options and arguments', () => {
  cliTest('a missing required option is named', async ({ aex }) => {
    const r = await aex(['buy', 'some-service']);
    expect(r).toEqual({ code: 2, stdout: '', stderr: "error: required option '--input <file>' not specified\n(add --help for usage)\n" });
  });

  cliTest('an option with choices that is mandatory is required too', async ({ aex }) => {
    const r = await aex(['disputes', 'open', 'some-tx', '--description', 'the count is wrong']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining("error: required option '--reason <reason>' not specified")]);
  });

  cliTest('a missing argument is named', async ({ aex }) => {
    const r = await aex(['tx', 'show']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining("error: missing required argument 'transactionId'")]);
  });

  cliTest('a value outside an option\'s choices is refused, listing the choices', async ({ aex }) => {
    const r = await aex(['approvals', 'list', '--state', 'later']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining("argument 'later' is invalid. Allowed choices are pending, decided, all.")]);
  });

  cliTest('options that exclude each other are refused together', async ({ aex }) => {
    const r = await aex(['tx', 'negotiate', 'some-tx', '--accept', '--reject']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining("error: option '--accept' cannot be used with option '--reject'")]);
  });

  cliTest('negotiate without a move says which moves there are, and sends nothing', async ({ aex, exchange, profile: _ }) => {
    const r = await aex(['tx', 'negotiate', 'some-tx']);
    expect(r).toEqual({ code: 2, stdout: '', stderr: 'aex: Say what to do: --counter CENTS, --accept, --reject or --withdraw.\n' });
    expect(exchange.requests).toEqual([]);
  });

  cliTest('disputes decide without --accept or --refuse asks for one, and sends nothing', async ({ aex, exchange, profile: _ }) => {
    const r = await aex(['disputes', 'decide', 'some-dispute']);
    expect(r).toEqual({ code: 2, stdout: '', stderr: 'aex: Say --accept or --refuse.\n' });
    expect(exchange.requests).toEqual([]);
  });
});

describe('unknown commands and options', () => {
  cliTest('an unknown subcommand is refused with the nearest one suggested', async ({ aex }) => {
    const r = await aex(['wallet', 'balanse']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: unknown command 'balanse'\n\(Did you mean balance\?\)\n/);
  });

  cliTest('an unknown command is refused', async ({ aex }) => {
    const r = await aex(['nope']);
    expect(r).toEqual({ code: 2, stdout: '', stderr: "error: unknown command 'nope'\n(add --help for usage)\n" });
  });

  cliTest('an unknown option is refused', async ({ aex }) => {
    const r = await aex(['wallet', 'balance', '--nope']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining("error: unknown option '--nope'")]);
  });

  cliTest('a command group without its subcommand prints its help on standard error and exits 2', async ({ aex }) => {
    const r = await aex(['wallet']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^Usage: aex wallet \[options\] \[command\]\n[\s\S]*balance \[options\] +balance, held and available\n/);
  });
});

describe('help and version', () => {
  cliTest('--help prints a command\'s usage on standard output and exits 0', async ({ aex }) => {
    const r = await aex(['wallet', 'fund', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: aex wallet fund \[options\] <amountCents>\n\nadd money \(sandbox: at once; Stripe: open the checkout URL\)\n/);
    expect(r.stderr).toBe('');
  });

  cliTest('the tx alias shows the transactions command\'s help', async ({ aex }) => {
    const r = await aex(['tx', 'list', '--help']);
    expect([r.code, r.stdout.split('\n')[0]]).toEqual([0, 'Usage: aex transactions list [options]']);
  });

  cliTest('--version prints the version and exits 0', async ({ aex }) => {
    expect(await aex(['--version'])).toEqual({ code: 0, stdout: '0.1.0\n', stderr: '' });
  });
});
