import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/lib/server-process.js';
import { type Spawned, spawnCollected, waitForOutput, waitHealthy } from './process-tools.js';

/**
 * Data directories written by earlier embedded servers (fixtures made by
 * fixtures/make-layout-fixture.ts: layout 1 on commit e0d8d05, before LAYOUT existed; layout 2,
 * a file per object, on commit ac82e09) are moved to layout 3 (objects.sqlite) by the first
 * start of today's server; afterwards every stream reads, verifies and takes appends and
 * checkpoints as before, across a restart. Their tenants and streams are the ones layout 1
 * could not keep apart on a case-insensitive or Windows file system.
 */

interface Fixture {
  rootKey: string;
  keys: Record<string, string>;
  expected: Array<{
    tenant: string;
    stream: string;
    seq: number;
    hash: string;
    stateDigest: string;
    state: unknown;
    events: number;
  }>;
  stored: Record<string, string>;
}

const load = (layout: number) =>
  JSON.parse(
    gunzipSync(
      readFileSync(new URL(`fixtures/layout-v${layout}.json.gz`, import.meta.url)),
    ).toString('utf8'),
  ) as Fixture;

describe.each([1, 2])(
  'a data directory of object layout %i, on the first start of this version',
  (layout) => {
    const fixture = load(layout);
    let dir: string;
    let server: (Spawned & { url: string }) | undefined;

    const start = async () => {
      const port = await freePort();
      const spawned = spawnCollected(process.execPath, ['dist/node/server.mjs'], {
        HEFESTO_DATA_DIR: dir,
        HEFESTO_API_KEY: fixture.rootKey,
        HEFESTO_SNAPSHOT_EVERY: '2',
        HEFESTO_COMPACT_INTERVAL_MS: '0',
        PORT: `${port}`,
      });
      const url = `http://127.0.0.1:${port}`;
      server = { ...spawned, url };
      await waitHealthy(url, spawned);
      return server;
    };

    const stop = async () => {
      server?.child.kill('SIGTERM');
      expect(await server?.exited).toBe(0);
      server = undefined;
    };

    const call = async (tenant: string, path: string, body?: unknown) => {
      const res = await fetch(`${server?.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          authorization: `Bearer ${fixture.keys[tenant]}`,
          'content-type': 'application/json',
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    const base = (stream: string) => `/v1/streams/${encodeURIComponent(stream)}`;

    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'hefesto-upgrade-'));
      for (const [path, data] of Object.entries(fixture.stored)) {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), Buffer.from(data, 'base64'));
      }
    });
    afterAll(() => {
      server?.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });

    it('moves it to layout 3: every object a row of objects.sqlite, no object file left', async () => {
      expect(existsSync(join(dir, 'objects'))).toBe(true);
      const started = await start();
      await waitForOutput(started, 'Hefesto listening on');
      const objects = Object.keys(fixture.stored).filter((p) => p.startsWith('objects/')).length;
      expect(started.output()).toContain(`"from":${layout},"objects":${objects},"to":3`);
      expect(readFileSync(join(dir, 'LAYOUT'), 'utf8')).toBe('3\n');
      expect(existsSync(join(dir, 'objects'))).toBe(false);
      expect(existsSync(join(dir, 'objects.sqlite'))).toBe(true);
    });

    it('reads and verifies every stream as the old server did', async () => {
      for (const e of fixture.expected) {
        const at = `${e.tenant}/${e.stream}`;
        const head = await call(e.tenant, base(e.stream));
        expect(head.body, at).toMatchObject({
          seq: e.seq,
          hash: e.hash,
          stateDigest: e.stateDigest,
        });
        const state = await call(e.tenant, `${base(e.stream)}/state`);
        expect(state.body, at).toEqual({
          seq: e.seq,
          state: e.state,
          stateDigest: e.stateDigest,
          digestVersion: 1,
        });
        const page = await call(e.tenant, `${base(e.stream)}/events?limit=1000`);
        expect((page.body.events as unknown[]).length, at).toBe(e.events);
        const verify = await call(e.tenant, `${base(e.stream)}/verify`);
        expect(verify.body, at).toMatchObject({ ok: true, seq: e.seq, hash: e.hash });
      }
    });

    it('takes appends and checkpoints on every stream, which a restart keeps', async () => {
      for (const e of fixture.expected) {
        const at = `${e.tenant}/${e.stream}`;
        const appended = await call(e.tenant, `${base(e.stream)}/events`, {
          events: [{ type: 'observation', payload: { after: 'upgrade' } }],
        });
        expect(appended, at).toMatchObject({ status: 201, body: { firstSeq: e.seq + 1 } });
        const checkpoint = await call(e.tenant, `${base(e.stream)}/checkpoints`, {
          ops: [{ op: 'set', path: '/upgraded', value: true }],
          baseDigest: e.stateDigest,
        });
        expect(checkpoint, at).toMatchObject({ status: 201, body: { seq: e.seq + 2 } });
      }
      await stop();
      const restarted = await start();
      await waitForOutput(restarted, 'Hefesto listening on');
      expect(restarted.output()).not.toContain('object layout');
      for (const e of fixture.expected) {
        const at = `${e.tenant}/${e.stream}`;
        const verify = await call(e.tenant, `${base(e.stream)}/verify`);
        expect(verify.body, at).toMatchObject({ ok: true, seq: e.seq + 2 });
        const state = await call(e.tenant, `${base(e.stream)}/state`);
        expect(state.body.state, at).toEqual({ ...(e.state as object), upgraded: true });
      }
      await stop();
    });
  },
);
