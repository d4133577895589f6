import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import { LOOPBACK, listenAll, urlOf } from '../../../functions/wiring/listen.js';

/** How long close() lets the listener's requests finish before cutting their connections. */
const GRACE_MS = 10_000;

/**
 * The engine's `serve`: the same handler on `port`, on loopback (127.0.0.1 and ::1) unless
 * `host` names an address, as `npm start` binds. close() stops accepting, closes idle
 * keep-alive connections, and waits for the requests in flight (at most GRACE_MS).
 */
export const serveLoopback = async (
  handle: (request: Request) => Promise<Response>,
  at: { port: number; host?: string },
): Promise<{ url: string; close(): Promise<void> }> => {
  const hosts = at.host === undefined ? LOOPBACK : [at.host];
  const servers = hosts.map(() => createAdaptorServer({ fetch: handle }) as Server);
  let port: number;
  try {
    ({ port } = await listenAll(servers, at.port, hosts));
  } catch (err) {
    for (const server of servers) server.close();
    throw err;
  }
  return {
    url: urlOf(at.host, port),
    close: async () => {
      const force = setTimeout(() => {
        for (const server of servers) server.closeAllConnections();
      }, GRACE_MS).unref();
      const sweep = setInterval(() => {
        for (const server of servers) server.closeIdleConnections();
      }, 100).unref();
      const closed = servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            if (!server.listening) resolve();
            else server.close(() => resolve());
          }),
      );
      for (const server of servers) server.closeIdleConnections();
      await Promise.all(closed);
      clearTimeout(force);
      clearInterval(sweep);
    },
  };
};
