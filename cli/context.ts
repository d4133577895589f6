import { HefestoClient } from '../shared/client/client.js';

/** Defaults of the global flags. */
export const DEFAULT_URL = 'http://localhost:8787';
export const DEFAULT_TENANT = 'default';

/** The global settings: a flag, else its environment variable, else the default. Read once. */
export interface Settings {
  url: string;
  key: string | undefined;
  tenant: string;
  /** Whether --tenant or HEFESTO_TENANT named the tenant (offline checks then insist on it). */
  tenantGiven: boolean;
  json: boolean;
}

/**
 * A failure of the CLI itself (a bad argument, an unreadable file, a refused import), with a
 * stable code in the style of the server's. Exit status 1, or 2 for usage errors.
 */
export class CliError extends Error {
  readonly code: string;
  readonly exitCode: number;

  constructor(code: string, message: string, options?: { exitCode?: number; cause?: unknown }) {
    super(message, { cause: options?.cause });
    this.name = 'CliError';
    this.code = code;
    this.exitCode = options?.exitCode ?? 1;
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super('ErrUsage', message, { exitCode: 2 });
    this.name = 'UsageError';
  }
}

/** Where a command writes: results to `stdout`, progress and diagnostics to `stderr`. */
export interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
}

/** What a command gets: the settings, the streams, and a client factory. */
export interface Context extends Io {
  settings: Settings;
  /** A client for --url with --key; fails with ErrUnauthorized when no key was given. */
  client(options?: { verify?: boolean }): HefestoClient;
  /** Writes one line to stdout, waiting when the pipe is full. */
  print(line: string): Promise<void>;
}

export const createContext = (settings: Settings, io: Io): Context => ({
  ...io,
  settings,
  client: (options = {}) => {
    if (settings.key === undefined || settings.key === '') {
      throw new CliError('ErrUnauthorized', 'no API key: set HEFESTO_KEY or pass --key');
    }
    return new HefestoClient({
      baseUrl: settings.url,
      apiKey: settings.key,
      tenant: settings.tenant,
      verify: options.verify ?? false,
      retry: { maxAttempts: 4 },
    });
  },
  print: (line) => writeText(io.stdout, `${line}\n`),
});

/** Writes text, waiting for 'drain' when the stream's buffer is full. */
export const writeText = async (stream: NodeJS.WritableStream, text: string): Promise<void> => {
  if (stream.write(text)) return;
  await new Promise<void>((resolve, reject) => {
    const done = (err?: unknown) => {
      stream.off('drain', done);
      stream.off('error', done);
      if (err) reject(err);
      else resolve();
    };
    stream.once('drain', done);
    stream.once('error', done);
  });
};

/** Aligned `name  value` lines for people. */
export const fieldLines = (fields: [string, string | number][]): string[] => {
  const width = Math.max(...fields.map(([name]) => name.length));
  return fields.map(([name, value]) => `${name.padEnd(width)}  ${value}`);
};

/**
 * A chain that fails at seq 1 usually means the genesis was computed for another tenant:
 * the hint says so.
 */
export const tenantHint = (firstBadSeq: number, tenant: string): string =>
  firstBadSeq === 1
    ? ` (the chain is bound to its tenant: is "${tenant}" the key's tenant? see --tenant)`
    : '';
