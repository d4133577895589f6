import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TamperedLedgerError } from '../../shared/domain/errors.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { createHarness, type Harness, ROOT_KEY, STORE_FACTORIES } from '../http/harness.js';
import { type StoredRows, storedRows } from '../support/local-rows.js';

/**
 * Snapshots v2 on the embedded default: every byte of every chunk and snapshot root object
 * (rows of objects.sqlite, object layout 3), flipped one at a time on disk behind the
 * service's back, and each one deleted. `GET /verify`
 * of a stream whose bases or fork origin read that file must answer ok:false naming it, and a
 * new process reading the state must fail closed (this process's chunk cache holds only
 * chunks it verified, which are right whatever the disk says now).
 */

const EMPTY = EMPTY_STATE_DIGEST_V2;

describe('flipping any byte of any stored chunk or snapshot root file', () => {
  let h: Harness;
  let rows: StoredRows;

  beforeAll(async () => {
    const local = STORE_FACTORIES.find((f) => f.name === 'local');
    if (!local) throw new Error('no local factory');
    h = createHarness(local, { ledger: { snapshotEvery: 2 } });
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
    rows?.close();
    h.close();
  });

  const verify = async (stream: string) =>
    (await h.request(`/v1/streams/${stream}/verify`, { key: ROOT_KEY })).json();
  const bad = async () => {
    const [snap, forked] = await Promise.all([verify('snap'), verify('forked')]);
    return [snap, forked].filter((r) => (r as { ok: boolean }).ok === false) as Array<{
      object: string;
    }>;
  };

  it('makes verify name the snapshot or the fork origin, every time; a deleted file too', async () => {
    const chunks = rows.keys('/chunks/');
    const roots = rows.keys('/s/snap/snap/');
    expect(chunks.length).toBe(3); // the states at 2, 3 (the fork's) and 4: one leaf each
    expect(roots.length).toBe(2);
    let flips = 0;
    for (const key of [...chunks, ...roots]) {
      const original = Buffer.from(rows.read(key));
      for (let i = 0; i < original.length; i++) {
        const copy = Buffer.from(original);
        copy[i] = (copy[i] ?? 0) ^ 0x01;
        rows.write(key, copy);
        const failed = await bad();
        expect(failed.length, `${key} byte ${i}`).toBeGreaterThan(0);
        for (const f of failed) expect(['snapshot', 'fork-origin']).toContain(f.object);
        flips++;
      }
      rows.remove(key);
      expect((await bad()).length, `${key} deleted`).toBeGreaterThan(0);
      rows.write(key, original);
    }
    // A new process after a chunk is deleted: the fork's state read fails closed.
    const forkChunk = chunks.find(
      (k) => rows.read(k).includes('"k2"') && !rows.read(k).includes('"k3"'),
    );
    if (!forkChunk) throw new Error('no chunk of the state at 3');
    const original = Buffer.from(rows.read(forkChunk));
    rows.remove(forkChunk);
    const fresh = new Ledger({ objects: h.objects, records: h.records, clock: { now: h.now } });
    await expect(fresh.states.hydrate('default', 'forked')).rejects.toBeInstanceOf(
      TamperedLedgerError,
    );
    rows.write(forkChunk, original);
    expect(flips).toBeGreaterThan(300);
    expect(await verify('snap')).toMatchObject({ ok: true, seq: 4 });
    expect(await verify('forked')).toMatchObject({ ok: true, seq: 1 });
  }, 240_000);
});
