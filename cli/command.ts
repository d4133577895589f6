import type { ParseArgsConfig } from 'node:util';
import { type Context, UsageError } from './context.js';

export type Options = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** One CLI command: its words, usage, options, and what it does. Returns the exit status. */
export interface Command {
  /** The command words, e.g. `keys create`. */
  name: string;
  /** Positionals and options after the name, e.g. `STREAM [--at N]`. */
  usage: string;
  summary: string;
  /** Names of the required positionals, in order. */
  args: string[];
  options: Options;
  run(ctx: Context, args: string[], values: Values): Promise<number>;
}

/** A string option's value, or undefined. */
export const stringOption = (values: Values, name: string): string | undefined => {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
};

/** An integer option's value (at least `min`), or undefined; anything else is a usage error. */
export const intOption = (values: Values, name: string, min: number): number | undefined => {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    throw new UsageError(`--${name} must be an integer >= ${min}, got "${text}"`);
  }
  return value;
};

export const flagOption = (values: Values, name: string): boolean => values[name] === true;
