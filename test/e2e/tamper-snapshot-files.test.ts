import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, ROOT_KEY, STORE_FACTORIES } from '../http/harness.js';
import { type StoredRows, storedRows } from '../support/local-rows.js';

/**
 * Every byte of every stored snapshot of the embedded default (the base snapshots and a
 * fork's origin), flipped one at a time on disk (in its row of objects.sqlite) behind the
 * service's back, and each one deleted: `GET /verify` must answer ok:false naming the object each time (issue 11 item 8),
 * and the state reads that need it must fail closed.
 */

/** The seq a snapshot stands for: its name starts with it, 16 digits. */
const seqOf = (file: string): number => Number(/(\d{16})-[0-9a-f]{64}/.exec(file)?.[1]);

const EMPTY = '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327';

describe('flipping any byte of any stored snapshot', () => {
  let h: Harness;
  let rows: StoredRows;

  beforeAll(async () => {
    const local = STORE_FACTORIES.find((f) => f.name === 'local');
    if (!local) throw new Error('no local factory');
    // Snapshot format v1 files (whole states); tamper-chunk-files.test.ts does the same for v2.
    h = createHarness(local, { ledger: { snapshotEvery: 2, snapshotEncoding: 'jcs' } });
    let digest = EMPTY;
    for (let i = 0; i < 4; i++) {
      const res = await h.request('/v1/streams/snap/checkpoints', {
        key: ROOT_KEY,
        body: { baseDigest: digest, ops: [{ op: 'set', path: `/k${i}`, value: { turn: i } }] },
      });
      digest = ((await res.json()) as { stateDigest: string }).stateDigest;
    }
    const fork = await h.request('/v1/streams/snap/fork', {
      key: ROOT_KEY,
      body: { newStreamId: 'forked', at: 3 },
    });
    expect(fork.status).toBe(201);
    rows = storedRows(h.dataDir ?? '');
  });
  afterAll(() => {
    rows.close();
    h.close();
  });

  const verify = async (stream: string) =>
    (await h.request(`/v1/streams/${stream}/verify`, { key: ROOT_KEY })).json();

  it('makes verify name the snapshot, every time; a deleted one too', async () => {
    const cases = [
      ...rows
        .keys('/s/snap/snap/')
        .map((file) => ({ file, stream: 'snap', object: 'snapshot', at: seqOf(file) })),
      ...rows
        .keys('/s/forked/snap/')
        .map((file) => ({ file, stream: 'forked', object: 'fork-origin', at: 1 })),
    ];
    expect(cases.map((c) => c.object)).toEqual(['snapshot', 'snapshot', 'fork-origin']);
    let flips = 0;
    for (const { file, stream, object, at } of cases) {
      const original = rows.read(file);
      for (let i = 0; i < original.length; i++) {
        const copy = Buffer.from(original);
        copy[i] = (copy[i] ?? 0) ^ 0x01;
        rows.write(file, copy);
        expect(await verify(stream), `${file} byte ${i}`).toMatchObject({ ok: false, object });
        flips++;
      }
      rows.remove(file);
      expect(await verify(stream), `${file} deleted`).toMatchObject({ ok: false, object });
      const state = await h.request(`/v1/streams/${stream}/state?at=${at}`, { key: ROOT_KEY });
      expect(state.status, `${file} deleted`).toBe(500);
      rows.write(file, original);
    }
    expect(flips).toBeGreaterThan(500);
    expect(await verify('snap')).toMatchObject({ ok: true, seq: 4 });
    expect(await verify('forked')).toMatchObject({ ok: true, seq: 1 });
  }, 120_000);
});
