import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalKeyStore } from '../../shared/adapters/local/local-key-store.js';
import { MemoryKeyWrapper } from '../../shared/adapters/memory/memory-key-wrapper.js';
import { streamKeyKey } from '../../shared/chain/storage-keys.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import { ContentSealedError } from '../../shared/domain/errors.js';
import type { KeyWrapper } from '../../shared/ports/key-wrapper.js';
import { allStores, memoryStores, type StorePair } from '../support/stores.js';

/**
 * The stream keys (docs/privacy.md, Decision 3): one key record per stream, created by a
 * conditional put so racing first appends share one secret; cached, so a warm process makes
 * no wrapper (KMS) call; a record another key store wrapped, or one edited or moved, fails
 * closed as ContentSealedError. On every record store, with the memory wrapper and the
 * embedded key store file.
 */

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-keys-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const wrappers: Array<{ name: string; make: () => KeyWrapper }> = [
  { name: 'memory wrapper', make: () => new MemoryKeyWrapper() },
  { name: 'local key store', make: () => new LocalKeyStore(join(tempDir(), 'keys', 'kek.sqlite')) },
];

for (const factory of allStores.filter((s) => s.enabled)) {
  for (const w of wrappers) {
    describe(`StreamKeyring on ${factory.name} with the ${w.name}`, () => {
      let stores: StorePair | undefined;
      afterEach(async () => {
        await stores?.cleanup();
        stores = undefined;
      });

      it('gives racing first writers one key, and readers the same key later', async () => {
        const pair = await factory.make();
        stores = pair;
        const wrapper = w.make();
        // separate processes: each keyring its own cache, one record store and key store
        const rings = Array.from({ length: 4 }, () => new StreamKeyring(pair.records, wrapper));
        const got = await Promise.all(rings.map((r) => r.forWrite('acme', 'run-1')));
        const ids = new Set(got.map((k) => k.keyId));
        expect(ids.size).toBe(1);
        expect(new Set(got.map((k) => k.keys.content.toString('hex'))).size).toBe(1);
        const cold = await new StreamKeyring(stores.records, wrapper).forRead('acme', 'run-1');
        expect(cold?.keys.commit.equals(got[0]?.keys.commit ?? Buffer.alloc(0))).toBe(true);
        // other streams and tenants get other keys
        const other = await rings[0]?.forWrite('acme', 'run-2');
        const tenant = await rings[0]?.forWrite('beta', 'run-1');
        expect(other?.keys.content.equals(got[0]?.keys.content ?? Buffer.alloc(0))).toBe(false);
        expect(tenant?.keys.content.equals(got[0]?.keys.content ?? Buffer.alloc(0))).toBe(false);
        // the stored record holds no key in the clear
        const item = await stores.records.get(streamKeyKey('acme', 'run-1'));
        const stored = JSON.stringify(item);
        for (const k of Object.values(got[0]?.keys ?? {})) {
          expect(stored).not.toContain(k.toString('hex'));
          expect(stored).not.toContain(k.toString('base64'));
        }
      });

      it('answers no keys for a stream written in the clear, and creates none on read', async () => {
        stores = await factory.make();
        const ring = new StreamKeyring(stores.records, w.make());
        expect(await ring.forRead('acme', 'plain')).toBeUndefined();
        expect(await stores.records.get(streamKeyKey('acme', 'plain'))).toBeUndefined();
      });

      it('refuses a key record it cannot unwrap: another key store, edited, moved', async () => {
        stores = await factory.make();
        const wrapper = w.make();
        await new StreamKeyring(stores.records, wrapper).forWrite('acme', 'run-1');
        // another key store (a server started without its own)
        const stranger = new StreamKeyring(stores.records, w.make());
        await expect(stranger.forRead('acme', 'run-1')).rejects.toBeInstanceOf(ContentSealedError);
        await expect(stranger.forWrite('acme', 'run-1')).rejects.toBeInstanceOf(ContentSealedError);
        // moved to another stream
        const item = await stores.records.get(streamKeyKey('acme', 'run-1'));
        if (!item) throw new Error('no key record');
        await stores.records.put({ ...item, ...streamKeyKey('acme', 'run-9') });
        const ring = new StreamKeyring(stores.records, wrapper);
        await expect(ring.forRead('acme', 'run-9')).rejects.toBeInstanceOf(ContentSealedError);
        // edited: a flipped byte, or another key id
        const wrapped = Buffer.from(String(item.wrapped), 'base64');
        wrapped[20] = (wrapped[20] ?? 0) ^ 1;
        await stores.records.put({ ...item, wrapped: wrapped.toString('base64') });
        await expect(ring.forRead('acme', 'run-1')).rejects.toBeInstanceOf(ContentSealedError);
        await stores.records.put({ ...item, keyId: 'other' });
        await expect(ring.forRead('acme', 'run-1')).rejects.toBeInstanceOf(ContentSealedError);
        // and a refused record is never replaced by a new key
        expect((await stores.records.get(streamKeyKey('acme', 'run-1')))?.keyId).toBe('other');
      });
    });
  }
}

describe('StreamKeyring cache', () => {
  it('makes one unwrap per stream per process, none per append', async () => {
    const stores = await memoryStores.make();
    const wrapper = new MemoryKeyWrapper();
    await new StreamKeyring(stores.records, wrapper).forWrite('acme', 'run-1');
    expect(wrapper.calls).toEqual({ generate: 1, unwrap: 1 });
    const ring = new StreamKeyring(stores.records, wrapper);
    for (let i = 0; i < 100; i++) await ring.forWrite('acme', 'run-1');
    expect(wrapper.calls).toEqual({ generate: 1, unwrap: 2 });
  });

  it('keeps at most maxEntries streams unwrapped', async () => {
    const stores = await memoryStores.make();
    const wrapper = new MemoryKeyWrapper();
    const ring = new StreamKeyring(stores.records, wrapper, { maxEntries: 2 });
    for (const s of ['a', 'b', 'c']) await ring.forWrite('acme', s);
    const before = wrapper.calls.unwrap;
    await ring.forRead('acme', 'c');
    expect(wrapper.calls.unwrap).toBe(before);
    await ring.forRead('acme', 'a'); // evicted: unwrapped again
    expect(wrapper.calls.unwrap).toBe(before + 1);
  });
});

describe('LocalKeyStore file', () => {
  it('lives in its own file, mode 0600 in a 0700 directory, and keeps its KEKs across opens', async () => {
    const path = join(tempDir(), 'keys', 'kek.sqlite');
    const a = new LocalKeyStore(path);
    const ctx = { tenant: 'acme', stream: 'run-1', keyId: 'k1' };
    const { secret, wrapped } = await a.generate(ctx);
    a.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(path, '..')).mode & 0o777).toBe(0o700);
    const b = new LocalKeyStore(path);
    expect((await b.unwrap(ctx, wrapped)).equals(secret)).toBe(true);
    await expect(b.unwrap({ ...ctx, keyId: 'k2' }, wrapped)).rejects.toThrow(/does not unwrap/);
    b.close();
  });

  it('changes no mode of a directory or file it did not create, and refuses one too open', () => {
    // A directory others may list (a cwd) is used as it is; one others may write is refused.
    const listed = join(tempDir(), 'listed');
    mkdirSync(listed, { mode: 0o755 });
    chmodSync(listed, 0o755);
    new LocalKeyStore(join(listed, 'kek.sqlite')).close();
    expect(statSync(listed).mode & 0o777).toBe(0o755);
    expect(statSync(join(listed, 'kek.sqlite')).mode & 0o777).toBe(0o600);

    const open = join(tempDir(), 'open');
    mkdirSync(open, { mode: 0o777 });
    chmodSync(open, 0o777);
    expect(() => new LocalKeyStore(join(open, 'kek.sqlite'))).toThrow(
      /key store directory .* has mode 777: others can write to it/,
    );
    expect(statSync(open).mode & 0o777).toBe(0o777);

    const own = join(tempDir(), 'own');
    mkdirSync(own, { mode: 0o700 });
    chmodSync(own, 0o700);
    const file = join(own, 'kek.sqlite');
    writeFileSync(file, '');
    chmodSync(file, 0o644);
    expect(() => new LocalKeyStore(file)).toThrow(
      /key store file .* has mode 644: others can read it/,
    );
    expect(statSync(file).mode & 0o777).toBe(0o644);
  });
});
