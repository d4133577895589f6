import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TamperedLedgerError } from '../../shared/domain/errors.js';
import { Ledger } from '../../shared/services/ledger.js';
import { createHarness, type Harness, ROOT_KEY, STORE_FACTORIES } from '../http/harness.js';

/**
 * Snapshots v2 on the embedded default: every byte of every chunk file and snapshot root file,
 * flipped one at a time on disk behind the service's back, and each file deleted. `GET /verify`
 * of a stream whose bases or fork origin read that file must answer ok:false naming it, and a
 * new process reading the state must fail closed (this process's chunk cache holds only
 * chunks it verified, which are right whatever the disk says now).
 */

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });

const EMPTY = '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a';

describe('flipping any byte of any stored chunk or snapshot root file', () => {
  let h: Harness;
  let dataDir: string;

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
    dataDir = h.dataDir ?? '';
  });
  afterAll(() => h.close());

  const verify = async (stream: string) =>
    (await h.request(`/v1/streams/${stream}/verify`, { key: ROOT_KEY })).json();
  const bad = async () => {
    const [snap, forked] = await Promise.all([verify('snap'), verify('forked')]);
    return [snap, forked].filter((r) => (r as { ok: boolean }).ok === false) as Array<{
      object: string;
    }>;
  };

  it('makes verify name the snapshot or the fork origin, every time; a deleted file too', async () => {
    const chunks = files(dataDir).filter((f) => f.includes(`${sep}chunks${sep}`));
    const roots = files(dataDir).filter((f) => f.includes(join('s', 'snap', 'snap')));
    expect(chunks.length).toBe(3); // the states at 2, 3 (the fork's) and 4: one leaf each
    expect(roots.length).toBe(2);
    let flips = 0;
    for (const file of [...chunks, ...roots]) {
      const original = readFileSync(file);
      for (let i = 0; i < original.length; i++) {
        const copy = Buffer.from(original);
        copy[i] = (copy[i] ?? 0) ^ 0x01;
        writeFileSync(file, copy);
        const failed = await bad();
        expect(failed.length, `${file} byte ${i}`).toBeGreaterThan(0);
        for (const f of failed) expect(['snapshot', 'fork-origin']).toContain(f.object);
        flips++;
      }
      rmSync(file);
      expect((await bad()).length, `${file} deleted`).toBeGreaterThan(0);
      writeFileSync(file, original);
    }
    // A new process after a chunk is deleted: the fork's state read fails closed.
    const forkChunk = chunks.find(
      (f) => readFileSync(f).includes('"k2"') && !readFileSync(f).includes('"k3"'),
    );
    if (!forkChunk) throw new Error('no chunk of the state at 3');
    const original = readFileSync(forkChunk);
    rmSync(forkChunk);
    const fresh = new Ledger({ objects: h.objects, records: h.records, clock: { now: h.now } });
    await expect(fresh.states.hydrate('default', 'forked')).rejects.toBeInstanceOf(
      TamperedLedgerError,
    );
    writeFileSync(forkChunk, original);
    expect(flips).toBeGreaterThan(300);
    expect(await verify('snap')).toMatchObject({ ok: true, seq: 4 });
    expect(await verify('forked')).toMatchObject({ ok: true, seq: 1 });
  }, 240_000);
});
