import { parseTilePath } from '../domain/merkle/tiles.js';
import type { ItemKey } from '../ports/record-store.js';
import {
  BASE_DUE_PREFIX,
  BOOTSTRAP_KEY,
  CHUNK_GC_DUE_PK,
  CKPT_PREFIX,
  CLIENT_IDEMPOTENCY_PREFIX,
  COMPACTOR_LEASE_SK,
  EFFECT_PREFIX,
  GARBAGE_PREFIX,
  HEAD_SK,
  LABEL_PREFIX,
  ORPHAN_PREFIX,
  PENDING_WRITE_PREFIX,
  REFUSED_PREFIX,
  SEGMENT_INDEX_PREFIX,
  SERVICE_IDEMPOTENCY_PREFIX,
  SIGNING_KEYS_KEY,
  SNAPSHOT_INDEX_PREFIX,
  SWEEP_SK,
  TILES_SK,
  WITNESS_PREFIX,
  WRITER_LEASE_SK,
} from './storage-keys.js';
import type { TamperedObject } from './tampered.js';

/**
 * Every storage kind, what it is and what detects its tampering (docs/ledger-format.md,
 * "Storage kinds and the tamper matrix"). Three classes:
 *
 * - `chain-bound`: content the chain binds; every read checks it against the chain before it
 *   serves it (the binding rule), `/verify` checks it too. A tampering is ErrTamperedLedger
 *   naming the object, or, where the server cannot see it by design (a consistent rollback),
 *   the client's trust store and the witness notice it.
 * - `control`: mutable records that steer work (leases, markers, visits, garbage lists,
 *   idempotency records...). Not chain-bound: tampering with one delays, repeats or refuses
 *   work, and never changes what a read serves.
 * - `authority`: whoever writes them holds the power they grant (API keys: whoever can write
 *   the table can mint keys). The threat model says so; nothing detects it.
 *
 * test/integration/tamper-matrix.test.ts enumerates these kinds: it tampers with each on every
 * adapter and asserts what is written here, and fails on a stored key no kind claims.
 */

export type StorageClass = 'chain-bound' | 'control' | 'authority';

/** The tamperings the matrix applies to a chain-bound kind. */
export type Mutation = 'edit' | 'swap-stream' | 'swap-seq' | 'delete' | 'rollback';
export const MUTATIONS: readonly Mutation[] = [
  'edit',
  'swap-stream',
  'swap-seq',
  'delete',
  'rollback',
];

/**
 * Who notices a tampering. Every read either answers as before or fails closed; absent
 * fields: that detector does not (and need not) fire.
 */
export interface Detection {
  /**
   * A server read that uses it fails closed: ErrTamperedLedger naming this object, or this
   * error (ErrInvalidFormat: stored bytes that do not decode, 500; ErrNotFound: a limit).
   */
  read?: TamperedObject | 'ErrInvalidFormat' | 'ErrNotFound';
  /** `/verify` answers ok:false naming this object. */
  verify?: TamperedObject;
  /** A checkpoint on top of it is refused (ErrTamperedLedger) and writes nothing. */
  refusesCheckpoint?: true;
  /**
   * By design the server serves it as a history of its own (a consistent rollback): the
   * client's trust store and the witness are the detectors.
   */
  invisible?: true;
  /** A verifying client refuses the server's history (TamperedHistoryError, this reason). */
  trustStore?: 'truncated' | 'rewritten';
  /** `hefesto audit --witness` fails. */
  witness?: true;
  /** Nothing any read serves changes, and why (every read answers as before, /verify passes). */
  harmless?: string;
}

/** Per tampering: who detects it, or (a string) why it cannot happen to this kind. */
export type Tamper = Record<Mutation, Detection | string>;

interface KindBase {
  name: string;
  class: StorageClass;
  /** Its key, as the docs show it. */
  key: string;
  what: string;
  /** Chain-bound kinds: who detects each tampering. */
  tamper?: Tamper;
  /** Control and authority kinds: what an edit or a deletion does. */
  outcome?: string;
  /** A documented limit: a tampering that changes what a read serves and nothing notices. */
  limit?: string;
}

export interface RecordKind extends KindBase {
  store: 'records';
  matches(key: ItemKey): boolean;
}

export interface ObjectKind extends KindBase {
  /** `witness`: the write-once witness store (witness.ts), not the data bucket. */
  store: 'objects' | 'witness';
  matches(key: string): boolean;
}

export type StorageKind = RecordKind | ObjectKind;

const ID = '[^#/]+';
const STREAM_PK = new RegExp(`^t#${ID}#s#${ID}$`);
const SEQ = /^\d{16}$/;
const inStream =
  (sk: (sk: string) => boolean) =>
  (key: ItemKey): boolean =>
    STREAM_PK.test(key.pk) && sk(key.sk);
const exactly = (value: string) => (s: string) => s === value;
const prefixed =
  (prefix: string, rest: RegExp | undefined = undefined) =>
  (s: string) =>
    s.startsWith(prefix) && (rest === undefined || rest.test(s.slice(prefix.length)));
const inPk = (pk: RegExp, sk: (sk: string) => boolean) => (key: ItemKey) =>
  pk.test(key.pk) && sk(key.sk);
const any = () => true;

/** Reads and /verify name it; a checkpoint on top of it is refused. */
const bound = (object: TamperedObject, verify: TamperedObject = object): Detection => ({
  read: object,
  verify,
  refusesCheckpoint: true,
});
/** Reads and /verify name it; checkpoints do not read it. */
const listed = (object: TamperedObject): Detection => ({ read: object, verify: object });
const WRITTEN_ONCE = 'written once, never changed: no older version';
const ONE_PER_STREAM = 'one per stream: no other seq';

export const RECORD_KINDS: readonly RecordKind[] = [
  {
    name: 'head',
    store: 'records',
    class: 'chain-bound',
    key: 't#{tenant}#s#{stream} / head',
    what: "the chain head: seq, hash, the state's stateSeq and digest, the tree",
    matches: inStream(exactly(HEAD_SK)),
    tamper: {
      edit: bound('head'),
      'swap-stream': bound('head', 'segment'),
      'swap-seq': ONE_PER_STREAM,
      delete: bound('head'),
      rollback: { invisible: true, trustStore: 'truncated', witness: true },
    },
  },
  {
    name: 'segment-index',
    store: 'records',
    class: 'chain-bound',
    key: 't#{tenant}#s#{stream} / seg#{lastSeq}',
    what: "a committed segment's seq range, link hashes and object key",
    matches: inStream(prefixed(SEGMENT_INDEX_PREFIX, SEQ)),
    tamper: {
      edit: bound('segment'),
      'swap-stream': bound('segment'),
      'swap-seq': bound('segment'),
      delete: bound('head', 'segment'),
      rollback: listed('segment'),
    },
  },
  {
    name: 'snapshot-index',
    store: 'records',
    class: 'chain-bound',
    key: 't#{tenant}#s#{stream} / snap#{INV - seq}',
    what: "a base snapshot's seq, chain hash, state digest, stateSeq and object key",
    matches: inStream(prefixed(SNAPSHOT_INDEX_PREFIX, SEQ)),
    tamper: {
      edit: bound('snapshot'),
      'swap-stream': bound('snapshot'),
      'swap-seq': bound('snapshot'),
      delete: { harmless: 'a read uses an older base, or replays from the start' },
      rollback: WRITTEN_ONCE,
    },
  },
  {
    name: 'label',
    store: 'records',
    class: 'chain-bound',
    key: 't#{tenant}#s#{stream} / label#{label}',
    what: "a checkpoint label's seq",
    matches: inStream(prefixed(LABEL_PREFIX)),
    tamper: {
      edit: listed('checkpoint'),
      'swap-stream': listed('checkpoint'),
      'swap-seq': listed('checkpoint'),
      delete: { read: 'ErrNotFound', verify: 'checkpoint' },
      rollback: WRITTEN_ONCE,
    },
  },
  {
    name: 'checkpoint-entry',
    store: 'records',
    class: 'chain-bound',
    key: 't#{tenant}#s#{stream} / ckpt#{INV - seq}',
    what: 'a checkpoint list entry: label, meta, parent, state digest',
    matches: inStream(prefixed(CKPT_PREFIX, SEQ)),
    limit: 'its createdAt (the commit’s time, not the event’s) is served as stored',
    tamper: {
      edit: listed('checkpoint'),
      'swap-stream': listed('checkpoint'),
      'swap-seq': listed('checkpoint'),
      delete: listed('checkpoint'),
      rollback: WRITTEN_ONCE,
    },
  },
  {
    name: 'pending-write',
    store: 'records',
    class: 'chain-bound',
    key: 't#{tenant}#s#{stream} / pw#{label}#{task}#{idx}',
    what: "one pending write of a label's tasks (LangGraph putWrites)",
    matches: inStream(prefixed(PENDING_WRITE_PREFIX)),
    limit: 'not bound: served as stored; an edit or a deletion is not noticed (see Limits)',
  },
  {
    name: 'effect',
    store: 'records',
    class: 'chain-bound',
    key: 't#{tenant}#s#{stream} / effect#{effectKey}',
    what: "an effect's state, holder, result or error",
    matches: inStream(prefixed(EFFECT_PREFIX)),
    limit:
      'not bound: a finished effect answers its stored result, not the one its ledger event ' +
      'records; a deleted record lets the effect begin again',
  },
  {
    name: 'idempotency',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#s#{stream} / ikey#{incarnation}#{key}',
    what: "a client's Idempotency-Key: the request digest and the answer a retry gets",
    matches: inStream(prefixed(CLIENT_IDEMPOTENCY_PREFIX)),
    outcome:
      'a retry is answered from it. Deleted: the retry is committed again, a second batch ' +
      '(the chain stays whole). Its digest edited: the retry is refused ' +
      '(ErrIdempotencyKeyReused). Its answer edited: the retry answers it, its receipt ' +
      'signed again over the edited fields, which a client that checks receipts against a ' +
      'head it trusts refuses',
  },
  {
    name: 'idempotency-legacy',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#idem#{key} / idem',
    what: 'an idempotency record from before incarnations (read only)',
    matches: inPk(new RegExp(`^t#${ID}#idem#.+$`), exactly('idem')),
    outcome:
      'read only in the 24 h after a stream got its incarnation (legacyIdemUntil); ' +
      'outside them, edited or deleted, it changes nothing',
  },
  {
    name: 'idempotency-service',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#s#{stream} / idem#{key}',
    what: "the service's own idempotency key (an effect's ledger event)",
    matches: inStream(prefixed(SERVICE_IDEMPOTENCY_PREFIX)),
    outcome:
      "dedupes an effect's ledger event; the effect record keeps the event's seq, so " +
      'edited or deleted it changes nothing: a begin answers the result and appends ' +
      'nothing',
  },
  {
    name: 'writer-lease',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#s#{stream} / writer-lease',
    what: 'the writer lease: owner, epoch, expiry, exclusive',
    matches: inStream(exactly(WRITER_LEASE_SK)),
    outcome:
      "edited (its epoch moved) or deleted: the lease is lost and the holder's fenced " +
      'writes are refused (ErrFenced): fail safe. GET /v1/streams shows the lease as ' +
      'stored',
  },
  {
    name: 'refused',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#s#{stream} / refused#{firstSeq}',
    what: "a fenced writer's segment the exclusive lease refused",
    matches: inStream(prefixed(REFUSED_PREFIX, SEQ)),
    outcome:
      'deleted or edited: a writer rolling the refused batch forward no longer sees it ' +
      'was refused and may commit it, although its writer was answered ErrFenced (a batch ' +
      'of this stream chained on the head: the chain stays whole)',
  },
  {
    name: 'tiles',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#s#{stream} / tiles',
    what: 'the tree size whose tiles are stored',
    matches: inStream(exactly(TILES_SK)),
    outcome:
      'lowered or deleted: proofs take the hashes from the segments instead (the same ' +
      "proofs, more reads); tiles are checked against the head's root (see tile)",
  },
  {
    name: 'compactor-lease',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#s#{stream} / compactor-lease',
    what: "a compactor's lease on the stream",
    matches: inStream(exactly(COMPACTOR_LEASE_SK)),
    outcome:
      'deleted: another compactor may visit the stream at once (every step is idempotent ' +
      'and conditional); a far expiry: the stream is not compacted until it passes',
  },
  {
    name: 'base-due',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#s#{stream} / basedue#{seq}',
    what: 'a base snapshot due at seq',
    matches: inStream(prefixed(BASE_DUE_PREFIX, SEQ)),
    outcome:
      'deleted or moved: the compactor writes another base, or none (reads replay more ' +
      'deltas); every base is bound to the chain',
  },
  {
    name: 'garbage',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#s#{stream} / gc#{deleteAfter}#{tag}',
    what: 'superseded objects to delete after their grace',
    matches: inStream(prefixed(GARBAGE_PREFIX, /^\d{16}#.+$/)),
    outcome:
      'deleted: the superseded objects stay, unnamed (the orphan sweep finds them); ' +
      'edited to name live objects: the compactor deletes them after the grace, and reads ' +
      'of them then fail closed',
  },
  {
    name: 'orphan',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#s#{stream} / orphan#{objectKey}',
    what: 'an object under seg/ no index record names',
    matches: inStream(prefixed(ORPHAN_PREFIX)),
    outcome:
      'deleted: the next sweep records it again; the sweep deletes an object only if no ' +
      'index record names it',
  },
  {
    name: 'sweep',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#s#{stream} / sweep',
    what: 'an orphan sweep is due',
    matches: inStream(exactly(SWEEP_SK)),
    outcome: 'deleted or moved: the orphan sweep runs at the next merge instead',
  },
  {
    name: 'stream-index',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#streams / {stream}',
    what: "the tenant's list of streams",
    matches: inPk(new RegExp(`^t#${ID}#streams$`), any),
    outcome: 'deleted: the stream is not listed; edited: nothing (only the key is read)',
    limit:
      'GET /v1/streams lists the index as stored and serves each head’s seq and time and its ' +
      'writer lease unchecked: a deleted entry hides its stream (it reads and verifies as before)',
  },
  {
    name: 'chunk-ref',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#chunkrefs / {stream}#{kind}#{id}',
    what: 'a root whose chunks the chunk GC must keep',
    matches: inPk(new RegExp(`^t#${ID}#chunkrefs$`), any),
    outcome:
      'deleted or edited: the chunk GC may delete chunks a base or a value needs; reads ' +
      'of them then fail closed (ErrTamperedLedger), never a wrong value',
  },
  {
    name: 'chunk-gc-marker',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#chunkgc / marker',
    what: "the tenant chunk GC's generation and condemned list",
    matches: inPk(new RegExp(`^t#${ID}#chunkgc$`), exactly('marker')),
    outcome:
      'moved or deleted: the tenant chunk GC restarts or repeats a collection; a chunk it ' +
      'deletes while a base needs it makes reads fail closed',
  },
  {
    name: 'chunk-gc-due',
    store: 'records',
    class: 'control',
    key: `${CHUNK_GC_DUE_PK} / {tenant}`,
    what: 'a chunk GC visit of the tenant is due',
    matches: inPk(new RegExp(`^${CHUNK_GC_DUE_PK}$`), any),
    outcome: 'deleted or moved: the chunk GC runs at the next release of a reference instead',
  },
  {
    name: 'work-marker',
    store: 'records',
    class: 'control',
    key: 'compact#{shard} / {tenant}#{stream}',
    what: 'the stream is worth a compactor visit',
    matches: inPk(/^compact#\d+$/, any),
    outcome: 'deleted or edited: the stream waits for its next marker or scheduled visit',
  },
  {
    name: 'visit',
    store: 'records',
    class: 'control',
    key: 'due#{shard} / {dueAt}#{tenant}#{stream}',
    what: 'a compactor visit scheduled at dueAt',
    matches: inPk(/^due#\d+$/, any),
    outcome: 'deleted or edited: that work waits for the next marker',
  },
  {
    name: 'witness-marker',
    store: 'records',
    class: 'control',
    key: `${WITNESS_PREFIX}{shard} / {tenant}#{stream}`,
    what: 'the stream moved since the witness last published it',
    matches: inPk(new RegExp(`^${WITNESS_PREFIX}\\d+$`), any),
    outcome:
      'deleted or edited: the witness does not publish the stream until it moves again ' +
      '(the newest witnessed head is older; audits judge the ones published)',
  },
  {
    name: 'signing-keys',
    store: 'records',
    class: 'control',
    key: 'signing-keys / signing-keys',
    what: 'the public keys that have signed heads',
    matches: (k) => k.pk === SIGNING_KEYS_KEY.pk && k.sk === SIGNING_KEYS_KEY.sk,
    outcome:
      'a key added that the server does not hold: the server refuses to start ' +
      '(SigningKeyMissingError); deleted: the next start records its keys again (the ' +
      'guard against a lost key is reset)',
  },
  {
    name: 'api-key',
    store: 'records',
    class: 'authority',
    key: 'key#{keyId} / key',
    what: "an API key's hash, tenant and scopes",
    matches: inPk(/^key#[0-9a-f]{16}$/, exactly('key')),
    outcome:
      'whoever writes the table can mint keys: a record says the tenant and scopes its ' +
      'key acts for (a planted hash of a chosen key authenticates); deleted, the key is ' +
      'refused (401)',
  },
  {
    name: 'bootstrap',
    store: 'records',
    class: 'authority',
    key: 'bootstrap / bootstrap',
    what: 'the operator key was created',
    matches: (k) => k.pk === BOOTSTRAP_KEY.pk && k.sk === BOOTSTRAP_KEY.sk,
    outcome: 'deleted: the next start mints another operator key; edited: nothing',
  },
];

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
    what: 'a base snapshot (v1: the state; v2: a header naming its root chunk)',
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
      edit: { read: 'segment' },
      'swap-stream': { read: 'ErrInvalidFormat' },
      'swap-seq': { read: 'ErrInvalidFormat' },
      delete: { read: 'ErrInvalidFormat' },
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

export const STORAGE_KINDS: readonly StorageKind[] = [...RECORD_KINDS, ...OBJECT_KINDS];

/** The kind of a record key, or undefined when no kind claims it. */
export const classifyRecordKey = (key: ItemKey): RecordKind | undefined =>
  RECORD_KINDS.find((k) => k.matches(key));

/** The kind of an object key of the data bucket (or of the witness store). */
export const classifyObjectKey = (
  key: string,
  store: 'objects' | 'witness' = 'objects',
): ObjectKind | undefined => OBJECT_KINDS.find((k) => k.store === store && k.matches(key));
