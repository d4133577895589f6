import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../../scripts/lib/server-process.js';

/**
 * Where the embedded server listens: on this machine's loopback addresses only (127.0.0.1 and
 * ::1) unless HEFESTO_HOST opens it, and the start line says which.
 */

const running: ServerProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const server of running.splice(0)) {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const start = async (env: Record<string, string> = {}) => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-host-'));
  dirs.push(dir);
  const server = await startServer({
    HEFESTO_DATA_DIR: dir,
    HEFESTO_API_KEY: 'host-test-root-key-0123',
    ...env,
  });
  running.push(server);
  return { server, port: Number(new URL(server.url).port) };
};

/** /proc/net/tcp{,6} writes addresses as hex words in host (little-endian) order. */
const decode = (hex: string): string => {
  const bytes = (word: string) => (word.match(/../g) ?? []).reverse();
  if (hex.length === 8)
    return bytes(hex)
      .map((b) => Number.parseInt(b, 16))
      .join('.');
  const all = (hex.match(/.{8}/g) ?? []).flatMap(bytes).join('');
  const groups = (all.match(/.{4}/g) ?? []).map((g) => Number.parseInt(g, 16).toString(16));
  return groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
};

/** The local addresses of the sockets listening on TCP `port` (Linux). */
const listeningOn = (port: number): string[] =>
  ['/proc/net/tcp', '/proc/net/tcp6']
    .filter((table) => existsSync(table))
    .flatMap((table) => readFileSync(table, 'utf8').split('\n').slice(1))
    .map((line) => line.trim().split(/\s+/))
    .filter(
      ([, local, , state]) =>
        state === '0A' && local?.endsWith(`:${port.toString(16).toUpperCase().padStart(4, '0')}`),
    )
    .map(([, local]) => decode(local?.split(':')[0] ?? ''))
    .sort();

/** An IPv4 address of this machine that is not loopback, if it has one. */
const outsideAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && !a.internal && a.family === 'IPv4')?.address;

const answers = async (url: string) =>
  fetch(`${url}/healthz`).then(
    (res) => res.status,
    (err: { cause?: { code?: string } }) => err.cause?.code ?? 'failed',
  );

describe('embedded server address', () => {
  it('listens on 127.0.0.1 and ::1 only by default, and says so', async () => {
    const { server, port } = await start();

    expect(await answers(`http://127.0.0.1:${port}`)).toBe(200);
    expect(await answers(`http://[::1]:${port}`)).toBe(200);
    if (existsSync('/proc/net/tcp')) expect(listeningOn(port)).toEqual(['127.0.0.1', '::1']);
    if (outsideAddress) {
      expect(await answers(`http://${outsideAddress}:${port}`)).toBe('ECONNREFUSED');
    }
    expect(server.output()).toContain(
      `Hefesto listening on http://localhost:${port} (127.0.0.1 and ::1 only; HEFESTO_HOST=0.0.0.0 opens it;`,
    );
  });

  it('listens where HEFESTO_HOST says, printed at start', async () => {
    const { server, port } = await start({ HEFESTO_HOST: '0.0.0.0' });

    expect(await answers(`http://127.0.0.1:${port}`)).toBe(200);
    if (existsSync('/proc/net/tcp')) expect(listeningOn(port)).toEqual(['0.0.0.0']);
    if (outsideAddress) expect(await answers(`http://${outsideAddress}:${port}`)).toBe(200);
    expect(server.output()).toContain(
      `Hefesto listening on http://0.0.0.0:${port} (HEFESTO_HOST=0.0.0.0; docs: /docs`,
    );
  });

  it('stops cleanly with SIGTERM while listening on both loopback addresses', async () => {
    const { server } = await start();
    running.splice(running.indexOf(server), 1);

    server.child.kill('SIGTERM');

    expect(await server.exited).toBe(0);
  });
});
