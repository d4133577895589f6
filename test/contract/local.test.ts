import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../../shared/adapters/local/local-record-store.js';
import { objectStoreContract } from './object-store.contract.js';
import { recordStoreContract } from './record-store.contract.js';

const tempDir = () => mkdtempSync(join(tmpdir(), 'hefesto-local-'));

objectStoreContract('local', async ({ faults, retry }) => {
  const dir = tempDir();
  const store = new LocalObjectStore({ dir, faults, retry });
  return {
    store,
    cleanup: async () => {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

recordStoreContract('local', async ({ faults, retry }) => {
  const dir = tempDir();
  const store = new LocalRecordStore({ path: join(dir, 'records.db'), faults, retry });
  return {
    store,
    cleanup: async () => {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
