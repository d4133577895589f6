import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, ROOT_KEY, STORE_FACTORIES } from '../http/harness.js';
import { type StoredRows, storedRows } from '../support/local-rows.js';

/**
 * Every byte of every stored segment of the embedded default, flipped one at a time on disk
 * (in its row of objects.sqlite) behind the service's back: `GET /verify` must answer
 * ErrTamperedLedger each time, and reads that touch it must return none of it.
 */

describe('flipping any byte of any stored segment', () => {
  let h: Harness;
  let rows: StoredRows;

  beforeAll(async () => {
    const local = STORE_FACTORIES.find((f) => f.name === 'local');
    if (!local) throw new Error('no local factory');
    h = createHarness(local);
    await h.append(ROOT_KEY, 'flip', [{ type: 'observation', payload: { a: 1 } }]);
    await h.append(ROOT_KEY, 'flip', [
      { type: 'observation', payload: { b: 'two' } },
      { type: 'decision', payload: [3] },
    ]);
    await h.append(ROOT_KEY, 'flip', [{ type: 'observation', payload: null }]);
    rows = storedRows(h.dataDir ?? '');
  });
  afterAll(() => {
    rows.close();
    h.close();
  });

  it('makes verify report ErrTamperedLedger, every time', async () => {
    const segments = rows.keys('/s/flip/seg/');
    expect(segments.length).toBe(3);
    let flips = 0;
    for (const file of segments) {
      const original = rows.read(file);
      for (let i = 0; i < original.length; i++) {
        const copy = Buffer.from(original);
        copy[i] = (copy[i] ?? 0) ^ 0x01;
        rows.write(file, copy);
        const res = await h.request('/v1/streams/flip/verify', { key: ROOT_KEY });
        const body = (await res.json()) as { ok: boolean; code?: string };
        expect(body, `${file} byte ${i}`).toMatchObject({ ok: false, code: 'ErrTamperedLedger' });
        const read = await h.request('/v1/streams/flip/events?limit=100', { key: ROOT_KEY });
        expect(read.status, `${file} byte ${i}`).toBe(500);
        flips++;
      }
      rows.write(file, original);
    }
    expect(flips).toBeGreaterThan(1000);
    const ok = await h.request('/v1/streams/flip/verify', { key: ROOT_KEY });
    expect(await ok.json()).toMatchObject({ ok: true, seq: 4 });
  }, 120_000);
});
