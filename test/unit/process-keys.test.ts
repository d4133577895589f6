import { describe, expect, it } from 'vitest';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { InvalidInputError, UnauthorizedError } from '../../shared/domain/errors.js';
import { KeyService } from '../../shared/keys/keys.js';
import { systemClock } from '../../shared/ports/clock.js';
import type { RecordStore } from '../../shared/ports/record-store.js';

/** A record store that counts every call that could write. */
const counted = () => {
  const store = new MemoryRecordStore();
  const writes: string[] = [];
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (name !== 'get' && name !== 'query') writes.push(String(name));
        return value.apply(target, args);
      };
    },
  }) as RecordStore;
  return { records: proxy, writes };
};

const fails = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  return undefined;
};

describe('KeyService', () => {
  describe('mintProcessKey', () => {
    it('authenticates as the tenant and scopes asked for, never as the operator', async () => {
      const { records } = counted();
      const keys = new KeyService({ records, clock: systemClock });
      const issued = keys.mintProcessKey({ tenant: 'acme', scopes: ['write', 'read'] });
      expect(issued.key).toMatch(/^hk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
      expect(await keys.authenticate(issued.key)).toEqual({
        keyId: issued.id,
        tenant: 'acme',
        scopes: ['read', 'write'],
        root: false,
      });
    });

    it('writes nothing to the record store: another service on the same records refuses it', async () => {
      const { records, writes } = counted();
      const keys = new KeyService({ records, clock: systemClock });
      const issued = keys.mintProcessKey({ tenant: 'default', scopes: ['read'] });
      await keys.authenticate(issued.key);
      expect(writes).toEqual([]);
      const other = new KeyService({ records, clock: systemClock });
      expect(await fails(other.authenticate(issued.key))).toBeInstanceOf(UnauthorizedError);
    });

    it('is refused once dropped, and a key differing in its secret is refused meanwhile', async () => {
      const keys = new KeyService({ records: new MemoryRecordStore(), clock: systemClock });
      const issued = keys.mintProcessKey({ tenant: 'default', scopes: ['read'] });
      const forged = `${issued.key.slice(0, -1)}${issued.key.endsWith('A') ? 'B' : 'A'}`;
      expect(await fails(keys.authenticate(forged))).toBeInstanceOf(UnauthorizedError);
      keys.dropProcessKeys();
      expect(await fails(keys.authenticate(issued.key))).toBeInstanceOf(UnauthorizedError);
    });

    it('refuses a tenant id or scopes a stored key could not have', () => {
      const keys = new KeyService({ records: new MemoryRecordStore(), clock: systemClock });
      expect(() => keys.mintProcessKey({ tenant: 'no spaces', scopes: ['read'] })).toThrow(
        InvalidInputError,
      );
      expect(() => keys.mintProcessKey({ tenant: 'acme', scopes: [] })).toThrow(InvalidInputError);
      expect(() =>
        keys.mintProcessKey({ tenant: 'acme', scopes: ['read', 'root' as 'read'] }),
      ).toThrow(InvalidInputError);
    });
  });
});
