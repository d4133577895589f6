import type { ObjectStore } from '../../shared/ports/object-store.js';

/** Wraps an ObjectStore and counts the calls that reach it (reads are what hydration costs). */
export const countingObjects = (inner: ObjectStore) => {
  const counts = { get: 0, head: 0, list: 0, put: 0, delete: 0 };
  const store: ObjectStore = {
    get: (key) => {
      counts.get++;
      return inner.get(key);
    },
    head: (key) => {
      counts.head++;
      return inner.head(key);
    },
    list: (prefix, options) => {
      counts.list++;
      return inner.list(prefix, options);
    },
    putIfAbsent: (key, body) => {
      counts.put++;
      return inner.putIfAbsent(key, body);
    },
    putIfMatch: (key, body, etag) => {
      counts.put++;
      return inner.putIfMatch(key, body, etag);
    },
    delete: (key) => {
      counts.delete++;
      return inner.delete(key);
    },
  };
  const reset = () => {
    for (const k of Object.keys(counts) as Array<keyof typeof counts>) counts[k] = 0;
  };
  return { store, counts, reset };
};
