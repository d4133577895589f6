import type { ItemKey } from '../ports/record-store.js';
import type { ObjectKind, RecordKind, StorageKind } from './storage-kinds-model.js';
import { OBJECT_KINDS } from './storage-kinds-objects.js';
import { RECORD_KINDS } from './storage-kinds-records.js';

/**
 * Every storage kind, and the classifiers that tell a stored key's kind (the kinds, their
 * classes and detectors: storage-kinds-model.ts; the records' and objects' kinds:
 * storage-kinds-records.ts, storage-kinds-objects.ts; their keys: storage-keys.ts).
 */

export const STORAGE_KINDS: readonly StorageKind[] = [...RECORD_KINDS, ...OBJECT_KINDS];

/** The kind of a record key, or undefined when no kind claims it. */
export const classifyRecordKey = (key: ItemKey): RecordKind | undefined =>
  RECORD_KINDS.find((k) => k.matches(key));

/** The kind of an object key of the data bucket (or of the witness store). */
export const classifyObjectKey = (
  key: string,
  store: 'objects' | 'witness' = 'objects',
): ObjectKind | undefined => OBJECT_KINDS.find((k) => k.store === store && k.matches(key));
