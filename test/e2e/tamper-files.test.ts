import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, ROOT_KEY, STORE_FACTORIES } from '../http/harness.js';

/**
 * Every byte of every stored segment FILE of the embedded default, flipped one at a time on
 * disk behind the service's back: `GET /verify` must answer ErrTamperedLedger each time, and
 * reads that touch it must return none of it.
 */

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });

describe('flipping any byte of any stored segment file', () => {
  let h: Harness;
  let dataDir: string;

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
    dataDir = h.dataDir ?? '';
  });
  afterAll(() => h.close());

  it('makes verify report ErrTamperedLedger, every time', async () => {
    const segments = files(dataDir).filter((f) => f.includes(`${join('s', 'flip', 'seg')}`));
    expect(segments.length).toBe(3);
    let flips = 0;
    for (const file of segments) {
      const original = readFileSync(file);
      for (let i = 0; i < original.length; i++) {
        const copy = Buffer.from(original);
        copy[i] = (copy[i] ?? 0) ^ 0x01;
        writeFileSync(file, copy);
        const res = await h.request('/v1/streams/flip/verify', { key: ROOT_KEY });
        const body = (await res.json()) as { ok: boolean; code?: string };
        expect(body, `${file} byte ${i}`).toMatchObject({ ok: false, code: 'ErrTamperedLedger' });
        const read = await h.request('/v1/streams/flip/events?limit=100', { key: ROOT_KEY });
        expect(read.status, `${file} byte ${i}`).toBe(500);
        flips++;
      }
      writeFileSync(file, original);
    }
    expect(flips).toBeGreaterThan(1000);
    const ok = await h.request('/v1/streams/flip/verify', { key: ROOT_KEY });
    expect(await ok.json()).toMatchObject({ ok: true, seq: 4 });
  }, 120_000);
});
