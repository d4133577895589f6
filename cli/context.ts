import { HefestoClient } from '../shared/client/client.js';
import { HefestoApiError } from '../shared/client/errors.js';
import { Transport } from '../shared/client/http.js';
import type { Scope } from '../shared/client/types.js';

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

/** What `GET /v1/whoami` says about the key. */
export interface WhoAmI {
  keyId: string;
  tenant: string;
  scopes: Scope[];
  operator: boolean;
}

/** The tenant chains are checked against, and whether the key itself named it. */
export interface KeyTenant {
  tenant: string;
  fromKey: boolean;
}

/** What a command gets: the settings, the streams, and a client factory. */
export interface Context extends Io {
  settings: Settings;
  /** The environment the CLI runs in (commands that read the server settings use it). */
  env: NodeJS.ProcessEnv;
  /**
   * A client for --url with --key; fails with ErrUnauthorized when no key was given. Its
   * tenant (for chain checks from genesis) is `tenant`, else --tenant.
   */
  client(options?: { verify?: boolean; tenant?: string }): HefestoClient;
  /** The client's HTTP transport, for routes the client has no method for. */
  transport(options?: { timeoutMs?: number }): Transport;
  /**
   * The key's tenant, asked of the server (`GET /v1/whoami`, once per run). A --tenant that
   * names another tenant is refused (ErrTenantMismatch), so that it never shows up as a chain
   * failing at seq 1. A server without that route: --tenant, else `default`.
   */
  tenant(): Promise<KeyTenant>;
  /** Writes one line to stdout, waiting when the pipe is full. */
  print(line: string): Promise<void>;
}

const keyOf = (settings: Settings): string => {
  if (settings.key === undefined || settings.key === '') {
    throw new CliError('ErrUnauthorized', 'no API key: set HEFESTO_KEY or pass --key');
  }
  return settings.key;
};

const RETRY = { maxAttempts: 4 };

export const createContext = (
  settings: Settings,
  io: Io,
  env: NodeJS.ProcessEnv = process.env,
): Context => {
  const transport = (options: { timeoutMs?: number } = {}) =>
    new Transport({ baseUrl: settings.url, apiKey: keyOf(settings), retry: RETRY, ...options });
  let tenant: Promise<KeyTenant> | undefined;
  return {
    ...io,
    settings,
    env,
    client: (options = {}) =>
      new HefestoClient({
        baseUrl: settings.url,
        apiKey: keyOf(settings),
        tenant: options.tenant ?? settings.tenant,
        verify: options.verify ?? false,
        retry: RETRY,
      }),
    transport,
    tenant: () => {
      tenant ??= keyTenant(settings, transport());
      return tenant;
    },
    print: (line) => writeText(io.stdout, `${line}\n`),
  };
};

const keyTenant = async (settings: Settings, http: Transport): Promise<KeyTenant> => {
  let who: WhoAmI;
  try {
    who = (await http.call<WhoAmI>('GET', '/v1/whoami')).body;
  } catch (err) {
    // An older server: no such route. Fall back on what we were told.
    if (err instanceof HefestoApiError && err.status === 404) {
      return { tenant: settings.tenant, fromKey: false };
    }
    throw err;
  }
  if (settings.tenantGiven && settings.tenant !== who.tenant) {
    throw new CliError(
      'ErrTenantMismatch',
      `--tenant (or HEFESTO_TENANT) says "${settings.tenant}", but the key belongs to tenant ` +
        `"${who.tenant}"; leave --tenant out: the CLI reads it from the key`,
      { exitCode: 2 },
    );
  }
  return { tenant: who.tenant, fromKey: true };
};

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
 * A chain that fails at seq 1 may mean the genesis was computed for another tenant: the hint
 * says so, unless the tenant came from the key (then seq 1 really fails).
 */
export const tenantHint = (firstBadSeq: number, { tenant, fromKey }: KeyTenant): string =>
  firstBadSeq === 1 && !fromKey
    ? ` (the chain is bound to its tenant: is "${tenant}" the key's tenant? see --tenant)`
    : '';
