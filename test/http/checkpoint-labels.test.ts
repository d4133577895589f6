import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import {
  createHarness,
  type Harness,
  type ProblemBody,
  readJson as read,
  STORE_FACTORIES,
} from './harness.js';

/** The v2 checkpoint routes over HTTP: labels, list, baseSeq, pending writes, list/delete. */

interface Checkpointed {
  seq: number;
  stateDigest: string;
}

describe.each(STORE_FACTORIES)('checkpoint v2 routes on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  const cp = (stream: string, body: Record<string, unknown>, k = key) =>
    h.request(`/v1/streams/${stream}/checkpoints`, { key: k, body });

  beforeEach(async () => {
    h = createHarness(factory, { ledger: { snapshotEvery: 3 } });
    key = await h.newKey('acme');
  });
  afterEach(() => h.close());

  it('writes a labelled checkpoint and reads its label, list and state at its seq', async () => {
    const first = await read<Checkpointed>(
      cp('t1', {
        ops: [{ op: 'set', path: '/m', value: ['hi'] }],
        baseDigest: EMPTY_STATE_DIGEST_V2,
        label: 'c-1',
        meta: { source: 'input', step: -1 },
      }),
    );
    const second = await cp('t1', {
      ops: [{ op: 'set', path: '/m/-', value: 'there' }],
      baseDigest: first.stateDigest,
      label: 'c-2',
      parentLabel: 'c-1',
      meta: { source: 'loop', step: 0 },
    });
    expect(second.status).toBe(201);
    const label = await read<Record<string, unknown>>(
      h.request('/v1/streams/t1/checkpoints/c-2', { key }),
    );
    expect(label).toMatchObject({ label: 'c-2', seq: 2, parentLabel: 'c-1', meta: { step: 0 } });
    expect(typeof label.createdAt).toBe('number');
    const list = await read<{ checkpoints: Array<{ label: string }>; next: number | null }>(
      h.request('/v1/streams/t1/checkpoints?limit=1', { key }),
    );
    expect(list.checkpoints.map((c) => c.label)).toEqual(['c-2']);
    expect(list.next).toBe(2);
    const older = await read<{ checkpoints: Array<{ label: string }>; next: number | null }>(
      h.request(`/v1/streams/t1/checkpoints?before=${list.next}`, { key }),
    );
    expect(older).toEqual({
      checkpoints: [{ label: 'c-1', seq: 1, meta: { source: 'input', step: -1 } }],
      next: null,
    });
    const filtered = await read<{ checkpoints: Array<{ label: string }> }>(
      h.request('/v1/streams/t1/checkpoints?meta.source=input&meta.step=-1', { key }),
    );
    expect(filtered.checkpoints.map((c) => c.label)).toEqual(['c-1']);
    expect(
      await read<{ state: unknown }>(h.request('/v1/streams/t1/state?at=1', { key })),
    ).toMatchObject({ state: { m: ['hi'] } });
  });

  it('answers 409 ErrLabelExists for a label the stream holds, and 404 for an unknown one', async () => {
    const body = { ops: [{ op: 'set', path: '/a', value: 1 }], label: 'dup' };
    const ok = await read<Checkpointed>(cp('t1', { ...body, baseDigest: EMPTY_STATE_DIGEST_V2 }));
    const res = await cp('t1', { ...body, baseDigest: ok.stateDigest });
    expect(res.status).toBe(409);
    expect((await read<ProblemBody>(res)).code).toBe('ErrLabelExists');
    const missing = await h.request('/v1/streams/t1/checkpoints/none', { key });
    expect(missing.status).toBe(404);
    expect((await read<ProblemBody>(missing)).code).toBe('ErrNotFound');
  });

  it('refuses bad labels, meta over 16 KiB and bad baseSeq with 400, writing nothing', async () => {
    const base = { ops: [{ op: 'set', path: '/a', value: 1 }], baseDigest: EMPTY_STATE_DIGEST_V2 };
    for (const extra of [
      { label: 'has space' },
      { label: 'a#b' },
      { label: 'x'.repeat(129) },
      // A label is a URL path segment: '.' and '..' would be removed by URL normalization.
      { label: '.' },
      { label: '..' },
      { label: '.hidden' },
      { parentLabel: 'label#1' },
      { meta: { big: 'x'.repeat(17_000) } },
      { baseSeq: -1 },
      { baseSeq: 5 },
    ]) {
      const res = await cp('t1', { ...base, ...extra });
      expect(res.status, JSON.stringify(extra).slice(0, 60)).toBe(400);
    }
    expect(await h.headSeq(key, 't1')).toBeUndefined();
    expect((await h.request('/v1/streams/t1/checkpoints/a%23b', { key })).status).toBe(400);
  });

  it('branches with baseSeq and traps a baseDigest that is not the state there', async () => {
    const c1 = await read<Checkpointed>(
      cp('t1', { ops: [{ op: 'set', path: '/m', value: [1] }], baseDigest: EMPTY_STATE_DIGEST_V2 }),
    );
    const c2 = await read<Checkpointed>(
      cp('t1', { ops: [{ op: 'set', path: '/m/-', value: 2 }], baseDigest: c1.stateDigest }),
    );
    const stale = await cp('t1', {
      ops: [{ op: 'set', path: '/m/-', value: 9 }],
      baseDigest: c2.stateDigest,
      baseSeq: 1,
    });
    expect(stale.status).toBe(409);
    expect((await read<ProblemBody>(stale)).code).toBe('ErrDivergenceDetected');
    const branch = await cp('t1', {
      ops: [{ op: 'set', path: '/m/-', value: 3 }],
      baseDigest: c1.stateDigest,
      baseSeq: 1,
    });
    expect(branch.status).toBe(201);
    expect(
      await read<{ state: unknown }>(h.request('/v1/streams/t1/state', { key })),
    ).toMatchObject({ seq: 3, state: { m: [1, 3] } });
  });

  it('stores pending writes once and answers them sorted', async () => {
    await cp('t1', {
      ops: [{ op: 'set', path: '/a', value: 1 }],
      baseDigest: EMPTY_STATE_DIGEST_V2,
      label: 'c1',
    });
    const put = (body: unknown) => h.request('/v1/streams/t1/checkpoints/c1/writes', { key, body });
    const writes = [
      { idx: 1, channel: 'animals', value: ['dog'] },
      { idx: 0, channel: 'x', value: { deep: [1] } },
    ];
    expect(await read(put({ taskId: 'pet_task', writes }))).toEqual({ written: 2 });
    expect(await read(put({ taskId: 'pet_task', writes }))).toEqual({ written: 0 });
    expect((await put({ taskId: 'a', writes: [{ idx: 0, channel: 'c' }] })).status).toBe(400);
    expect((await put({ taskId: '', writes })).status).toBe(400);
    const got = await read<{ writes: Array<{ idx: number }> }>(
      h.request('/v1/streams/t1/checkpoints/c1/writes', { key }),
    );
    expect(got.writes).toEqual([
      { taskId: 'pet_task', taskPath: '', idx: 0, channel: 'x', value: { deep: [1] } },
      { taskId: 'pet_task', taskPath: '', idx: 1, channel: 'animals', value: ['dog'] },
    ]);
    expect((await h.request('/v1/streams/t1/checkpoints/c9/writes', { key })).status).toBe(404);
  });

  it('lists the tenant’s streams and deletes one with the admin scope only', async () => {
    for (const id of ['a.1', 'a.2', 'b.1']) {
      await cp(id, {
        ops: [{ op: 'set', path: '/a', value: 1 }],
        baseDigest: EMPTY_STATE_DIGEST_V2,
      });
    }
    const other = await h.newKey('globex');
    await cp(
      'a.9',
      { ops: [{ op: 'set', path: '/a', value: 1 }], baseDigest: EMPTY_STATE_DIGEST_V2 },
      other,
    );
    const page = await read<{ streams: Array<Record<string, unknown>>; next: string | null }>(
      h.request('/v1/streams?prefix=a.', { key }),
    );
    expect(page.streams.map((s) => s.streamId)).toEqual(['a.1', 'a.2']);
    expect(page.streams[0]).toEqual({
      streamId: 'a.1',
      seq: 1,
      updatedAt: new Date(h.now()).toISOString(),
      lease: null,
    });
    expect(page.next).toBeNull();
    const paged = await read<{ streams: unknown[]; next: string | null }>(
      h.request('/v1/streams?limit=2', { key }),
    );
    expect(paged.next).toBe('a.2');
    expect((await h.request('/v1/streams?limit=0', { key })).status).toBe(400);
    expect((await h.request('/v1/streams?limit=1001', { key })).status).toBe(400);

    const denied = await h.request('/v1/streams/a.1', { key, method: 'DELETE' });
    expect(denied.status).toBe(403);
    const admin = await h.newKey('acme', ['read', 'admin']);
    expect((await h.request('/v1/streams/a.1', { key: admin, method: 'DELETE' })).status).toBe(204);
    expect((await h.request('/v1/streams/a.1', { key, method: 'GET' })).status).toBe(404);
    expect((await h.request('/v1/streams/a.1', { key: admin, method: 'DELETE' })).status).toBe(404);
    // Another tenant's stream of the same id is untouched, and not deleted by this key.
    expect((await h.request('/v1/streams/a.9', { key: admin, method: 'DELETE' })).status).toBe(404);
    const after = await read<{ streams: Array<{ streamId: string }> }>(
      h.request('/v1/streams', { key }),
    );
    expect(after.streams.map((s) => s.streamId)).toEqual(['a.2', 'b.1']);
  });

  it('documents every new route in the OpenAPI document with its error responses', async () => {
    const doc = (await read<{ paths: Record<string, Record<string, { responses: object }>> }>(
      h.request('/v1/openapi.json'),
    )) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    const routes: Array<[string, string, string[]]> = [
      ['/v1/streams', 'get', ['200', '400', '401', '403']],
      ['/v1/streams/{streamId}', 'delete', ['204', '401', '403', '404']],
      ['/v1/streams/{streamId}/checkpoints', 'get', ['200', '400', '404']],
      ['/v1/streams/{streamId}/checkpoints/{label}', 'get', ['200', '400', '404']],
      ['/v1/streams/{streamId}/checkpoints/{label}/writes', 'post', ['200', '400', '404', '413']],
      ['/v1/streams/{streamId}/checkpoints/{label}/writes', 'get', ['200', '404']],
    ];
    for (const [path, method, statuses] of routes) {
      const op = doc.paths[path]?.[method];
      expect(op, `${method} ${path}`).toBeDefined();
      for (const s of statuses) expect(op?.responses[s], `${method} ${path} ${s}`).toBeDefined();
    }
    const request = (
      doc as unknown as {
        components: { schemas: Record<string, { properties: Record<string, unknown> }> };
      }
    ).components.schemas.CheckpointRequest;
    for (const field of ['baseSeq', 'label', 'meta', 'parentLabel']) {
      expect(request?.properties[field], field).toBeDefined();
    }
  });

  it('answers 500 ErrTamperedLedger for an edited pending write of a bound checkpoint, and /verify names it', async () => {
    let digest = EMPTY_STATE_DIGEST_V2;
    for (const [i, label] of ['w-1', 'w-2', 'w-3'].entries()) {
      const res = await read<Checkpointed>(
        cp('tw', {
          ops: [{ op: 'set', path: '/n', value: i }],
          baseDigest: digest,
          label,
          ...(i > 0 ? { parentLabel: `w-${i}` } : {}),
        }),
      );
      digest = res.stateDigest;
      if (i === 0) {
        const put = await h.request('/v1/streams/tw/checkpoints/w-1/writes', {
          key,
          body: { taskId: 't', writes: [{ idx: 0, channel: 'messages', value: 'v0' }] },
        });
        expect(put.status).toBe(200);
      }
    }
    const writes = '/v1/streams/tw/checkpoints/w-1/writes';
    expect((await h.request(writes, { key })).status).toBe(200);
    const page = await h.records.query('t#acme#s#tw', { skPrefix: 'pw#w-1#' });
    const item = page.items[0];
    if (!item) throw new Error('no write stored');
    await h.records.put({ ...item, valueJson: '"forged"' });
    const res = await h.request(writes, { key });
    expect(res.status).toBe(500);
    expect(await read<ProblemBody>(res)).toMatchObject({ code: 'ErrTamperedLedger' });
    const verify = await read<Record<string, unknown>>(h.request('/v1/streams/tw/verify', { key }));
    expect(verify).toMatchObject({ ok: false, object: 'pending-writes', seq: 1 });
  });
});
