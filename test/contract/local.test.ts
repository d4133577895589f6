import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import { LocalRecordStore, RECORD_WRITES } from '../../shared/adapters/local/local-record-store.js';
import { OBJECT_WRITES } from '../../shared/adapters/local/objects-db.js';
import { RemoteWriter, WriteServer } from '../../shared/adapters/local/remote-writer.js';
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

/**
 * The same contracts for a worker of the multi-process server (remote-writer.ts): its store
 * reads the file another store owns and sends every write to that owner's WriteServer (the
 * IPC channel replaced by a call with structuredClone, as the cluster's serialization copies).
 */
const throughWriter = (path: string, owner: { close(): void }) => {
  const server = new WriteServer(path, { objects: OBJECT_WRITES, records: RECORD_WRITES });
  const answer = (reply: unknown) => remote.receive(structuredClone(reply));
  const remote: RemoteWriter = new RemoteWriter(
    (message) => server.handle(structuredClone(message), answer),
    { timeoutMs: 30_000, maxWriteBytes: 64 * 1024 * 1024 },
  );
  return {
    remote,
    close: () => {
      server.close();
      owner.close();
    },
  };
};

objectStoreContract(
  'local, a worker writing through the writer process',
  async ({ faults, retry }) => {
    const dir = tempDir();
    const owner = new LocalObjectStore({ dir });
    const { remote, close } = throughWriter(owner.path, owner);
    const store = new LocalObjectStore({ dir, faults, retry, remote });
    return {
      store,
      cleanup: async () => {
        store.close();
        close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
);

recordStoreContract(
  'local, a worker writing through the writer process',
  async ({ faults, retry }) => {
    const dir = tempDir();
    const path = join(dir, 'records.db');
    const owner = new LocalRecordStore({ path });
    const { remote, close } = throughWriter(path, owner);
    const store = new LocalRecordStore({ path, faults, retry, remote });
    return {
      store,
      cleanup: async () => {
        store.close();
        close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
);
