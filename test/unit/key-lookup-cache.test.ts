import { describe, expect, it } from 'vitest';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { UnauthorizedError } from '../../shared/domain/errors.js';
import { KeyService, type Principal } from '../../shared/keys/keys.js';
import { systemClock } from '../../shared/ports/clock.js';
import type { RecordStore } from '../../shared/ports/record-store.js';

/**
 * A memory record store that counts its reads and can hold the next `get` until released
 * (to run a revocation while a lookup has read its record but not yet finished).
 */
const store = () => {
  const inner = new MemoryRecordStore();
  let reads = 0;
  let hold: { reached: () => void; release: Promise<void> } | undefined;
  const records = new Proxy(inner, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      if (name !== 'get') return value.bind(target);
      return async (...args: unknown[]) => {
        reads++;
        const out = await value.apply(target, args);
        const held = hold;
        if (held) {
          hold = undefined;
          held.reached();
          await held.release;
        }
        return out;
      };
    },
  }) as RecordStore;
  return {
    records,
    reads: () => reads,
    /** The next get reads, then waits for `release()`; `reached` resolves when it read. */
    holdNextGet: () => {
      let release!: () => void;
      let reached!: () => void;
      const reachedP = new Promise<void>((r) => {
        reached = r;
      });
      hold = { reached, release: new Promise<void>((r) => (release = r)) };
      return { reached: reachedP, release: () => release() };
    },
  };
};

const OPERATOR: Principal = { keyId: 'root', tenant: 'default', scopes: ['admin'], root: true };

const refused = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (err) {
    return err instanceof UnauthorizedError;
  }
  return false;
};

describe('KeyService', () => {
  describe('authenticate with cacheLookups', () => {
    it('reads a key record once, then answers from memory', async () => {
      const s = store();
      const keys = new KeyService({ records: s.records, clock: systemClock, cacheLookups: true });
      const { key } = await keys.create(OPERATOR, { tenant: 'acme', scopes: ['read'] });
      const before = s.reads();
      const first = await keys.authenticate(key);
      await keys.authenticate(key);
      await keys.authenticate(key);
      expect(first).toMatchObject({ tenant: 'acme', scopes: ['read'], root: false });
      expect(s.reads() - before).toBe(1);
    });

    it('reads the record every time without it (the AWS wiring: other instances revoke)', async () => {
      const s = store();
      const keys = new KeyService({ records: s.records, clock: systemClock });
      const { key } = await keys.create(OPERATOR, { tenant: 'acme', scopes: ['read'] });
      const before = s.reads();
      await keys.authenticate(key);
      await keys.authenticate(key);
      expect(s.reads() - before).toBe(2);
    });

    it('refuses a revoked key on the very next request', async () => {
      const s = store();
      const keys = new KeyService({ records: s.records, clock: systemClock, cacheLookups: true });
      const { id, key } = await keys.create(OPERATOR, { tenant: 'acme', scopes: ['read'] });
      await keys.authenticate(key);
      await keys.revoke(OPERATOR, id);
      expect(await refused(keys.authenticate(key))).toBe(true);
    });

    it('does not cache a record read before a revocation finished', async () => {
      const s = store();
      const keys = new KeyService({ records: s.records, clock: systemClock, cacheLookups: true });
      const { id, key } = await keys.create(OPERATOR, { tenant: 'acme', scopes: ['read'] });
      // A lookup reads the unrevoked record, then waits while the key is revoked.
      const gate = s.holdNextGet();
      const inFlight = keys.authenticate(key);
      await gate.reached;
      await keys.revoke(OPERATOR, id);
      gate.release();
      // It began before the revocation, so it may pass; it must not leave the key cached.
      await inFlight;
      expect(await refused(keys.authenticate(key))).toBe(true);
    });

    it('refuses another secret for a cached key id', async () => {
      const s = store();
      const keys = new KeyService({ records: s.records, clock: systemClock, cacheLookups: true });
      const { key } = await keys.create(OPERATOR, { tenant: 'acme', scopes: ['read'] });
      await keys.authenticate(key);
      const forged = `${key.slice(0, 20)}${key.at(20) === 'A' ? 'B' : 'A'}${key.slice(21)}`;
      expect(await refused(keys.authenticate(forged))).toBe(true);
    });

    it('drops the entry when the revocation write fails (it may have happened)', async () => {
      const s = store();
      const keys = new KeyService({ records: s.records, clock: systemClock, cacheLookups: true });
      const { id, key } = await keys.create(OPERATOR, { tenant: 'acme', scopes: ['read'] });
      await keys.authenticate(key);
      // The write happens, then its reply is lost.
      const update = s.records.update.bind(s.records);
      s.records.update = async (...args: Parameters<RecordStore['update']>) => {
        await update(...args);
        throw new Error('reply lost');
      };
      await expect(keys.revoke(OPERATOR, id)).rejects.toThrow('reply lost');
      expect(await refused(keys.authenticate(key))).toBe(true);
    });
  });
});
