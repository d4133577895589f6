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
  STREAM_KEY_SK,
  SWEEP_SK,
  TILES_SK,
  WITNESS_PREFIX,
  WRITER_LEASE_SK,
} from './storage-keys.js';
import {
  bound,
  ID,
  listed,
  ONE_PER_STREAM,
  type RecordKind,
  WRITTEN_ONCE,
} from './storage-kinds-model.js';

/** The record kinds (storage-kinds.ts), each with its classifier, class and detectors. */

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
      // The later commits' writesFrozen and writesSeq gone: the writes look left unbound.
      rollback: listed('pending-writes'),
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
    what:
      "one pending write of a label's tasks (LangGraph putWrites); on a stream sealed at rest " +
      'its value is sealed (valueSealed, AAD bound to tenant, stream and the sk)',
    matches: inStream(prefixed(PENDING_WRITE_PREFIX)),
    limit:
      'the writes of the tip and of the checkpoint it left are served as stored until the ' +
      'next commit binds them (see Limits)',
    tamper: {
      edit: listed('pending-writes'),
      'swap-stream': {
        harmless:
          'the other stream’s write at that key is the same write (task, idx, value); a sealed ' +
          'value from another stream does not open (ErrTamperedLedger)',
      },
      'swap-seq': listed('pending-writes'),
      delete: listed('pending-writes'),
      rollback:
        'written once while its checkpoint takes writes (a negative idx replaced only then, ' +
        'or by a hefesto.writes event that binds the new one): no older version once bound',
    },
  },
  {
    name: 'effect',
    store: 'records',
    class: 'chain-bound',
    key: 't#{tenant}#s#{stream} / effect#{effectKey}',
    what: "an effect's state, holder, result or error",
    matches: inStream(prefixed(EFFECT_PREFIX)),
    limit:
      'a pending effect has no event yet: served as stored; a page of the effect list does ' +
      'not notice a deleted record (begin and /verify do)',
    tamper: {
      edit: listed('effect'),
      'swap-stream': listed('effect'),
      'swap-seq': listed('effect'),
      delete: listed('effect'),
      rollback: 'finished once: its record does not change after its event is written',
    },
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
    what: "the service's own idempotency key (an effect's ledger event, a session history operation)",
    matches: inStream(prefixed(SERVICE_IDEMPOTENCY_PREFIX)),
    outcome:
      "dedupes an effect's ledger event; the effect record keeps the event's seq, so " +
      'edited or deleted it changes nothing: a begin answers the result and appends ' +
      'nothing. A session history operation (`idem#hist#…`): deleted, its retry is ' +
      'evaluated again (a replace_suffix then fails on its own suffix; an append_items is ' +
      'appended twice); its digest edited, the retry is refused (ErrIdempotencyKeyReused)',
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
    name: 'stream-key',
    store: 'records',
    class: 'control',
    key: 't#{tenant}#s#{stream} / key',
    what: "the stream's secret wrapped by its tenant's KEK, the wrapper and the key's id",
    matches: inStream(exactly(STREAM_KEY_SK)),
    outcome:
      'edited (its wrapped bytes, its keyId), moved from another stream or tenant, or ' +
      'deleted: the wrap binds tenant, stream and keyId, so it does not unwrap; the content ' +
      'of the stream is unavailable (ErrUnavailable) or the append is refused ' +
      '(ErrTamperedLedger), never served or written otherwise; /verify passes over the headers',
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
