import { parseTilePath } from '../domain/merkle/tiles.js';
import { bound, ID, type ObjectKind, WRITTEN_ONCE } from './storage-kinds-model.js';

/** The object kinds (storage-kinds.ts): the data bucket's and the witness store's. */

const STREAM_OBJECT = `^t/${ID}/s/${ID}/`;
const TENANT_OBJECT = `^t/${ID}/`;
const isTile = (key: string): boolean => {
  const m = new RegExp(`${STREAM_OBJECT}(tile/.+)$`).exec(key);
  if (m?.[1] === undefined) return false;
  try {
    parseTilePath(m[1]);
    return true;
  } catch {
    return false;
  }
};
const regex = (r: RegExp) => (key: string) => r.test(key);

export const OBJECT_KINDS: readonly ObjectKind[] = [
  {
    name: 'segment',
    store: 'objects',
    class: 'chain-bound',
    key: 't/{tenant}/s/{stream}/seg/{firstSeq}[-{lastSeq}]',
    what: 'events, hash-chained (an appended batch, or a merged range)',
    matches: regex(new RegExp(`${STREAM_OBJECT}seg/\\d{16}(-\\d{16})?$`)),
    tamper: {
      edit: bound('segment'),
      'swap-stream': bound('segment'),
      'swap-seq': bound('segment'),
      delete: bound('segment'),
      rollback: {
        harmless: 'superseded objects that no index record names: no read uses them',
      },
    },
  },
  {
    name: 'snapshot',
    store: 'objects',
    class: 'chain-bound',
    key: 't/{tenant}/s/{stream}/snap/{seq}-{stateDigest}',
    what: 'a base snapshot (v1: the state; v2: a header naming its root chunk); on a stream sealed at rest the whole object sealed (AES-256-GCM, AAD kind snap and its key)',
    matches: regex(new RegExp(`${STREAM_OBJECT}snap/(?!0{16})\\d{16}-[^/]+$`)),
    tamper: {
      edit: bound('snapshot'),
      'swap-stream': bound('snapshot'),
      'swap-seq': bound('snapshot'),
      delete: bound('snapshot'),
      rollback: WRITTEN_ONCE,
    },
  },
  {
    name: 'fork-origin',
    store: 'objects',
    class: 'chain-bound',
    key: 't/{tenant}/s/{stream}/snap/0000000000000000-{stateDigest}',
    what: "a v1 fork's origin state",
    matches: regex(new RegExp(`${STREAM_OBJECT}snap/0{16}-[^/]+$`)),
    tamper: {
      edit: bound('fork-origin'),
      'swap-stream': bound('fork-origin'),
      'swap-seq': 'one per fork',
      delete: bound('fork-origin'),
      rollback: WRITTEN_ONCE,
    },
  },
  {
    name: 'tile',
    store: 'objects',
    class: 'chain-bound',
    key: 't/{tenant}/s/{stream}/tile/{level}/{index}[.p/{width}]',
    what: 'hashes of the Merkle tree (tlog-tiles)',
    matches: isTile,
    tamper: {
      edit: { read: 'tree' },
      'swap-stream': { read: 'tree' },
      'swap-seq': { read: 'tree' },
      delete: { read: 'tree' },
      rollback: WRITTEN_ONCE,
    },
  },
  {
    name: 'chunk',
    store: 'objects',
    class: 'chain-bound',
    key: 't/{tenant}/chunks/{hash}',
    what: 'a content-addressed chunk of a state or of a value set by ref',
    matches: regex(new RegExp(`${TENANT_OBJECT}chunks/[^/]+$`)),
    tamper: {
      edit: bound('snapshot'),
      'swap-stream': 'a chunk is the tenant’s, named by its hash: no stream of its own',
      'swap-seq': bound('snapshot'),
      delete: bound('snapshot'),
      rollback: WRITTEN_ONCE,
    },
  },
  {
    name: 'chunk-gc-list',
    store: 'objects',
    class: 'control',
    key: 't/{tenant}/chunkgc/{gen}-{at}',
    what: 'the chunks a chunk GC condemned',
    matches: regex(new RegExp(`${TENANT_OBJECT}chunkgc/\\d{16}-\\d{16}$`)),
    outcome:
      'edited to name live chunks: the sweep deletes them (reads of them then fail ' +
      'closed); emptied or deleted: the collection starts over',
  },
  {
    name: 'witness-object',
    store: 'witness',
    class: 'chain-bound',
    key: 'w/{tenant}/{publishedAt}-{runId}.json',
    what: "a witness run's signed heads of a tenant's streams (write-once storage)",
    matches: regex(new RegExp(`^w/${ID}/\\d{16}-[^/]+\\.json$`)),
    tamper: {
      edit: {
        harmless:
          'a forged version does not verify under the signing keys: the audit reports it ' +
          '(witness: ignored …) and judges the genuine ones',
      },
      'swap-stream':
        'each head names its tenant and stream under its signature: copied elsewhere, it ' +
        'still names its own',
      'swap-seq': 'versions are judged one by one, in no order: there is no other place',
      delete:
        'write-once: Object Lock in compliance mode refuses it on AWS; embedded, files are ' +
        'read-only (one deleted by hand loses that head: the trust stores remain)',
      rollback: 'write-once: a put makes a new version beside the old one, never over it',
    },
  },
];
