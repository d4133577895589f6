import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.js';
import { headKey } from '../../shared/chain/storage-keys.js';
import { createHarness, events, type Harness, ROOT_KEY, STORE_FACTORIES } from '../http/harness.js';

/**
 * `hefesto repair STREAM` against a server: rebuilds a deleted head (issue 11 item 10), says
 * so, and is refused without the admin scope.
 */

const sink = () => {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
};

describe('hefesto repair', () => {
  let h: Harness;
  let server: ServerType;
  let url: string;
  const cli = async (args: string[], key = ROOT_KEY) => {
    const out = sink();
    const err = sink();
    const code = await runCli(
      args,
      { HEFESTO_URL: url, HEFESTO_KEY: key },
      {
        stdout: out.stream,
        stderr: err.stream,
      },
    );
    return { code, stdout: out.text(), stderr: err.text() };
  };

  beforeAll(async () => {
    const memory = STORE_FACTORIES.find((f) => f.name === 'memory');
    if (!memory) throw new Error('no memory stores');
    h = createHarness(memory);
    server = serve({ fetch: h.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    h.close();
  });

  it('rebuilds a deleted head and prints it, then finds nothing to do', async () => {
    const res = await h.append(ROOT_KEY, 'run-1', events(3));
    const { head } = (await res.json()) as { head: { seq: number; hash: string } };
    await h.records.delete(headKey('default', 'run-1'));
    expect((await h.request('/v1/streams/run-1', { key: ROOT_KEY })).status).toBe(500);

    const first = await cli(['repair', 'run-1']);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toContain('repaired run-1');
    expect(first.stdout).toMatch(/head before\s+none/);
    expect(first.stdout).toContain(`seq 3 hash ${head.hash}`);
    expect((await h.request('/v1/streams/run-1', { key: ROOT_KEY })).status).toBe(200);

    const second = await cli(['repair', 'run-1', '--json']);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ repaired: false, head: { seq: 3 } });
  });

  it('is refused without the admin scope, naming the code', async () => {
    const writer = await h.newKey('default', ['read', 'write']);
    const run = await cli(['repair', 'run-1'], writer);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('ErrForbidden');
  });
});
