import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { objectStoreContract } from './object-store.contract.js';
import { recordStoreContract } from './record-store.contract.js';

objectStoreContract('memory', async (options) => ({
  store: new MemoryObjectStore(options),
  cleanup: async () => {},
}));

recordStoreContract('memory', async (options) => ({
  store: new MemoryRecordStore(options),
  cleanup: async () => {},
}));
