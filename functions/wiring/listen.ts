import type { Server } from 'node:http';
import type { IssuedKey } from '../../shared/keys/keys.js';

/**
 * Binding the embedded server's HTTP listeners (functions/server.ts, and the in-process
 * engine's `serve` option in packages/embedded): loopback by default, one socket per address,
 * with errors an operator can act on.
 */

/** Where the server listens unless HEFESTO_HOST says otherwise: this machine only. */
export const LOOPBACK = ['127.0.0.1', '::1'] as const;

/** Binds `port` on `host`; rejects with a message an operator can act on if it cannot. */
const listen = (server: Server, port: number, host: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => {
      const hint =
        err.code === 'EADDRINUSE'
          ? `port ${port} is already in use: stop what listens there, or set PORT to another port`
          : err.code === 'EACCES'
            ? `port ${port} needs privileges this process lacks: set PORT to one above 1023`
            : `cannot listen on ${host} port ${port}: ${err.message}`;
      reject(Object.assign(new Error(hint, { cause: err }), { code: err.code }));
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });

/** An address family this machine lacks (no IPv6): the loopback pair binds the other alone. */
const familyMissing = (err: unknown) =>
  ['EADDRNOTAVAIL', 'EAFNOSUPPORT'].includes((err as { code?: string }).code ?? '');

/**
 * Binds every server of `servers` to `port` (the first picks it when `port` is 0), one per
 * host of `hosts`; returns the port and the hosts actually bound.
 */
export const listenAll = async (servers: Server[], port: number, hosts: readonly string[]) => {
  const bound: string[] = [];
  let at = port;
  for (const [i, host] of hosts.entries()) {
    const server = servers[i];
    if (!server) continue;
    try {
      at = await listen(server, at, host);
      bound.push(host);
    } catch (err) {
      // ::1 without IPv6 (or 127.0.0.1 without IPv4): serve on the loopback that exists.
      if (hosts === LOOPBACK && familyMissing(err)) continue;
      throw err;
    }
  }
  if (bound.length === 0) throw new Error(`cannot listen on ${hosts.join(' or ')}`);
  return { port: at, bound };
};

/** The URL the start line prints: localhost for the loopback pair, else the bound address. */
export const urlOf = (host: string | undefined, port: number) =>
  host === undefined
    ? `http://localhost:${port}`
    : `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/**
 * The start line (and the first API key, shown this once) both the one-process server and
 * the multi-process writer print; `note` adds to the parenthesis (e.g. the worker count).
 */
export const startBanner = (
  host: string | undefined,
  port: number,
  bound: readonly string[],
  bootstrap: IssuedKey | undefined,
  note = '',
): string => {
  const reach =
    host === undefined
      ? `${bound.join(' and ')} only; HEFESTO_HOST=0.0.0.0 opens it`
      : `HEFESTO_HOST=${host}`;
  const lines = [
    `Hefesto listening on ${urlOf(host, port)} (${reach}; docs: /docs, pid ${process.pid}${note})`,
  ];
  if (bootstrap) {
    lines.push(
      `Created the first API key (tenant ${bootstrap.tenant}, scopes ${bootstrap.scopes.join(',')}).`,
      'It is shown only this once; keep it:',
      `  ${bootstrap.key}`,
    );
  }
  return `${lines.join('\n')}\n`;
};
