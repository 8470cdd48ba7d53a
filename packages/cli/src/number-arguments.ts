import { InvalidArgumentError } from 'commander';

/** A parser of whole-number options and arguments, whose refusal says what the number counts. */
const wholeNumber = (what: string) => (name: string) => (v: string) => {
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new InvalidArgumentError(`${name} is ${what}.`);
  return Number(v);
};

export const cents = wholeNumber('a whole number of cents');
export const int = wholeNumber('a whole number');
