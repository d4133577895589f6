import { headItem, headMismatch, isStrandedOrphan, LayoutRaceError } from '../chain/chain-head.js';
import { toHead, toIdempotency, toSegmentIndex } from '../chain/layout.js';
import {
  headKey,
  idempotencyRecordKey,
  isServiceKey,
  labelOfSk,
  legacyIdempotencyKey,
  pad16,
  SEGMENT_INDEX_PREFIX,
  segmentIndexKey,
  segmentKey,
  streamPk,
  writerLeaseKey,
} from '../chain/storage-keys.js';
import type { StreamKeyset } from '../chain/stream-keyring.js';
import {
  ConflictError,
  ContentSealedError,
  DivergenceError,
  DrainingError,
  FencedError,
  HefestoError,
  IdempotencyInProgressError,
  IdempotencyKeyReusedError,
  InvalidInputError,
  LabelExistsError,
  SeqConflictError,
  StreamNotFoundError,
  StreamRecreatedError,
  TamperedLedgerError,
  UnavailableError,
} from '../domain/errors.js';
import { genesisHash, type SealedEvent, sealBatch } from '../domain/event.js';
import { decodeSegment, encodeSegment } from '../domain/segment.js';
import type { SignedTreeHead } from '../domain/signed-head.js';
import { DELTA_EVENT } from '../domain/state.js';
import { emptyStateDigest, NEW_STREAM_DIGEST_VERSION } from '../domain/state-digest.js';
import { type Fence, fenceError, isFenced, leaseGuard } from '../leases/leases.js';
import { randomIds } from '../ports/clock.js';
import type { Item, JsonValue, TransactOp } from '../ports/record-store.js';
import { signTree, treeCommit, treeOf } from '../proofs/tree-commit.js';
import {
  type AppendOptions,
  type AppendOutcome,
  type AppendRequest,
  type ChainHead,
  type CommitSegment,
  responseOf,
  sealedEffect,
  stateEffect,
} from './append-model.js';
import {
  bindingsOf,
  chainEndCheck,
  clearsOf,
  commitExtras,
  deltaSeqsOf,
  expiryOf,
  labelledOf,
} from './commit-extras.js';
import { CommitRefusedError, CommitTransaction } from './commit-tx.js';
import { replayedResponse, storedReceipt } from './idem-receipt.js';
import { barOrphanWriter, isRefused, markRefused, notRefusedCheck } from './lease-orphans.js';

export {
  type AppendOptions,
  type AppendOutcome,
  type AppendRequest,
  type ChainHead,
  type CommitStep,
  type CrashHook,
  type StateEffect,
  stateEffect,
} from './append-model.js';

/**
 * The append commit protocol. One append = one segment object (create-only) + one record
 * transaction that moves the chain head over it.
 *
 *   1. Read the head (seq S, hash h, incarnation i); a request that names another
 *      incarnation (Hefesto-Incarnation: the life of the stream it was first sent to) is 409
 *      ErrStreamRecreated. If the request has an Idempotency-Key, then read its record, kept
 *      under (stream, i, key): done -> answer the stored response (other fingerprint -> 422).
 *      Dies here: nothing was written.
 *   2. Seal the events S+1..S+n and create the segment at key(S+1) with put-if-absent.
 *      If another segment is there, it is a concurrent or dead writer's: verify that it
 *      chains from h, commit it for them (roll forward), and start again at 1.
 *      Dies after this step: the segment is an orphan at head+1, never acknowledged and
 *      invisible to readers (they stop at the head). The next append to the stream, or the
 *      retry with the same key, finds it, verifies it and rolls the head over it, so the
 *      retry gets the original result and nothing is written twice.
 *   3. Commit: one transaction moves the head from S to S+n (condition: head still at S with
 *      the same epoch and incarnation), records the segment in the index, and stores the
 *      idempotency record. The commit that creates the head gives the stream a new
 *      incarnation (the id port), so a stream deleted and created again starts a new life
 *      whose idempotency records are its own.
 *      If the condition fails, the head moved: the only segment at key(S+1) is ours, so the
 *      head can only have moved by rolling ours forward; we confirm it from the index.
 *      Dies after this step: the append is durable; the retry finds the idempotency record.
 *   4. Answer 201, with the receipt: the signed tree head after the batch.
 *
 * The Merkle tree rides on step 3 (tree-commit.ts): the head update also moves the tree's
 * frontier and stores the receipt, signed in process before the transaction, which the
 * idempotency record keeps too, so a retry answers the original receipt. The backfill and the
 * witness change tree fields under an unchanged seq; a commit that read them before fails its
 * head condition and commits again on the head as it is now (at most 3 times). A writer whose
 * batch another writer rolled forward answers the receipt stored with its idempotency record
 * (or, without a key, a head signed now, whose tree holds the batch).
 *
 * Group commit (embedded, shared/adapters/local/durable-writer.ts): the segments of appends
 * that arrive together are made durable in one SQLite transaction, and so are their step-3
 * commits (heads, index and idempotency records of many streams, each in a savepoint of its
 * own); each append goes on only once its own transaction is durable. The batch adds:
 *   2a. Dies while a batch of segments is being committed: SQLite keeps all of it or none,
 *       so each append of it is before step 2 or at step 2's window.
 *   2b. Dies after a batch of segments is durable, before its appends' commits land: each is
 *       an orphan at its stream's head+1 (step 2's window), rolled forward by the next
 *       append to its stream or by its retry.
 *   3a. A commit of the batch whose condition fails (a head it read moved, maybe by another
 *       commit of the same batch) is undone alone and answered alone; the others commit. It
 *       is decided again on a fresh read and takes step 3's path if the head really moved.
 *   3b. Dies while a batch of commits is being committed: all of it or none (2b's state).
 *   3c. Dies after a batch of commits is durable, before its answers: each append of it is
 *       at step 3's window; its retry finds its idempotency record.
 *   Tested by test/e2e/group-commit-crash.test.ts (SIGKILL, 16 writers) and
 *   test/unit/local-group-commit.test.ts (3a).
 *
 * Any segment that does not verify is ErrTamperedLedger; it is never rolled forward. So is a
 * head that is not the chain end (its hash edited: the commit's condition on the index record
 * of the head's segment fails) or that is missing while index records remain (deleted:
 * readHead finds them when it finds no head); the operator repair (repair.ts) rebuilds it.
 * The segment an append chained on an edited head stays at head+1, never committable; after
 * the repair the next append replaces it (If-Match), like a fenced writer's orphan.
 *
 * The commit transaction also writes what compaction and retention need (commit-extras.ts),
 * and refuses a stream the compactor marked `deleting` (expired): such a stream answers
 * ErrStreamNotFound until it is gone. The compactor may merge committed segments into new
 * objects at keys an append never races for (`seg/{first}-{last}`); the only key an append
 * looks at, `seg/{head+1}`, is never merged, so roll-forward is unaffected.
 */

const isDeleting = (item: unknown): boolean => (item as Item | undefined)?.status === 'deleting';

/** Streams whose head hash this process knows ends a clear chain (#chainIsClear). */
const CLEAR_HEADS_KEPT = 10_000;

export class Appender {
  readonly #clearAt = new Map<string, string>();
  readonly #o: Required<Omit<AppendOptions, 'crash' | 'signer' | 'keyring'>> &
    Pick<AppendOptions, 'crash' | 'signer' | 'keyring'>;

  constructor(options: AppendOptions) {
    this.#o = {
      ...options,
      ids: options.ids ?? randomIds,
      inFlightGraceMs: options.inFlightGraceMs ?? 2000,
      idempotencyTtlSeconds: options.idempotencyTtlSeconds ?? 86_400,
      maxAttempts: options.maxAttempts ?? 16,
      markEvery: options.markEvery ?? 16,
      snapshotEvery: options.snapshotEvery ?? 25,
      defaultTtlMs: options.defaultTtlMs ?? 0,
      newStreamDigestVersion: options.newStreamDigestVersion ?? NEW_STREAM_DIGEST_VERSION,
    };
  }

  async readHead(tenant: string, stream: string): Promise<ChainHead> {
    // A missing head costs one query more (a new stream, or a deleted head: chain-head.ts),
    // so only a stream's first append pays it.
    const item = await headItem(this.#o.records, tenant, stream);
    if (item) return { ...toHead(item), exists: true };
    const now = this.#o.clock.now();
    // A stream created now uses state digest v2 (records-v2); the first commit writes it.
    const version = this.#o.newStreamDigestVersion;
    return {
      seq: 0,
      hash: genesisHash(tenant, stream),
      epoch: 0,
      ...(version === 2 ? { digestVersion: 2 as const } : {}),
      stateDigest: emptyStateDigest(version),
      deltas: 0,
      stateSeq: 0,
      createdAt: now,
      updatedAt: now,
      exists: false,
    };
  }

  async append(req: AppendRequest): Promise<AppendOutcome> {
    if (req.events.length === 0) throw new InvalidInputError('an append needs at least one event');
    const { objects, clock, crash, maxAttempts } = this.#o;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      // A caller that already read the head and then the idempotency record, in this order
      // (the checkpointer does), passes the head so the first attempt does not read both again.
      const known = attempt === 1 ? req.knownHead : undefined;
      const head = known ?? (await this.readHead(req.tenant, req.stream));
      crash?.('head-read');
      this.checkLife(req, head);
      const replay = known ? undefined : await this.storedResult(req, head);
      if (replay) return replay;
      if (req.expectedSeq !== undefined && req.expectedSeq !== head.seq) {
        throw new SeqConflictError(req.expectedSeq, head.seq);
      }
      if (req.expectedStateDigest !== undefined && req.expectedStateDigest !== head.stateDigest) {
        throw DivergenceError.staleBase(head);
      }

      const keyset = await this.#keysFor(req, head);
      const now = clock.now();
      const events = sealBatch(head.seq, head.hash, now, req.events, keyset?.keys.commit);
      const header = {
        tenant: req.tenant,
        stream: req.stream,
        epoch: req.fence?.epoch ?? 0,
        idempotencyKey: req.idempotency?.key ?? null,
        requestDigest: req.idempotency?.digest ?? null,
        createdAt: now,
      };
      const key = segmentKey(req.tenant, req.stream, head.seq + 1);
      const body = encodeSegment(header, events, keyset?.segment);
      let commitHead = head;
      try {
        // Answered only after step 3's commit, whose sync makes the segment durable too.
        await objects.putIfAbsent(key, body, { syncWithCommit: true });
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
        const outcome = await this.#rollForward(req, head, key, body, keyset);
        if (outcome && 'replaced' in outcome) {
          // a fenced writer's orphan, or a stranded one, was there: ours took its place
          commitHead = outcome.replaced;
        } else if (outcome) {
          return outcome;
        } else {
          continue;
        }
      }
      crash?.('segment-written');

      const last = events.at(-1) as SealedEvent;
      const batch = req.events.map((e, i) => ({
        seq: head.seq + 1 + i,
        type: e.type,
        payload: () => e.payload,
      }));
      const effect = stateEffect(batch, head);
      const ours = {
        firstSeq: head.seq + 1,
        lastSeq: last.seq,
        prevHash: head.hash,
        lastHash: last.hash,
        ...effect,
      };
      const extra = {
        deltaSeqs: deltaSeqsOf(batch),
        labelled: labelledOf(batch),
        bindings: bindingsOf(batch),
        clears: clearsOf(batch),
        expiry: expiryOf(batch),
        size: body.length,
        ttlMs: req.ttlMs,
        hashes: events.map((e) => e.hash),
      };
      let committed: Committed;
      try {
        committed = await this.#commit({
          tenant: req.tenant,
          stream: req.stream,
          head: commitHead,
          segment: {
            ...header,
            ...ours,
            ...extra,
            ...(keyset && { keyId: keyset.keyId, contentKey: keyset.keys.content }),
          },
          objectKey: key,
          fence: req.fence,
        });
      } catch (err) {
        await this.#lostCommit(req, ours, commitHead, key, err);
        committed = await this.#adoptedReceipt(req, ours);
      }
      crash?.('committed');
      if (!keyset) this.#rememberClear(`${req.tenant}/${req.stream}`, last.hash);
      const { receipt, incarnation } = committed;
      const response = {
        ...responseOf(ours, ours.stateDigest),
        ...(incarnation && { incarnation }),
        ...(receipt && { treeHead: receipt }),
      };
      return { response, replayed: false, deltas: ours.deltas };
    }
    throw new UnavailableError(
      `stream ${req.stream} is too contended: ${maxAttempts} head races lost`,
    );
  }

  /**
   * Our commit failed. Returns when our events are in the chain after all (another writer
   * rolled our segment forward first); otherwise throws what happened.
   */
  async #lostCommit(
    req: AppendRequest,
    ours: { firstSeq: number; lastSeq: number; lastHash: string },
    head: ChainHead,
    key: string,
    err: unknown,
  ): Promise<void> {
    const { records, clock } = this.#o;
    const { tenant, stream } = req;
    if (err instanceof FencedError && !req.fence) {
      // Refused while another worker holds the lease exclusively: mark our segment so that
      // nobody adopts it later (lease-orphans.ts), then answer the truth.
      await markRefused(records, tenant, stream, ours);
      if (await this.#isCommitted(tenant, stream, ours)) return;
      throw err;
    }
    if (!(err instanceof ConflictError)) throw err;
    if (isDeleting(err.current)) throw new StreamNotFoundError(stream);
    if (await this.#isCommitted(tenant, stream, ours)) return;
    const lease = await records.get(writerLeaseKey(tenant, stream));
    const now = clock.now();
    if (isFenced(lease, req.fence, now)) throw fenceError(lease, { ...req.fence }, now);
    const current = err.current as Item | undefined;
    const ended = head.incarnation !== undefined && current?.incarnation !== head.incarnation;
    if (err.index === 0 && current !== undefined && ended) {
      // Deleted and created again between our read and our commit (past the deletion grace).
      throw new StreamRecreatedError(stream, String(current.incarnation ?? ''));
    }
    if (err.index === 0 && current !== undefined && current.epoch !== head.epoch) {
      // Our head moved its epoch on: barred by a writer that replaced our segment.
      throw new FencedError(
        'an exclusive lease held while this write was in flight refused it; nothing was ' +
          'written: retry',
      );
    }
    throw new HefestoError(
      'ErrInternal',
      `segment ${key} lost its head race without being adopted`,
    );
  }

  /**
   * The receipt of our batch when another writer committed it for us: the one stored with
   * our idempotency record, else (no key) the head now, signed now (its tree holds the batch).
   */
  async #adoptedReceipt(req: AppendRequest, ours: { lastSeq: number }): Promise<Committed> {
    const head = await this.readHead(req.tenant, req.stream);
    const { incarnation } = head;
    const stored = await this.storedResult(req, head).catch(() => undefined);
    if (stored?.response.treeHead) return { receipt: stored.response.treeHead, incarnation };
    const { signer, clock } = this.#o;
    const tree = treeOf(head);
    if (!signer || !tree || head.seq < ours.lastSeq) return { incarnation };
    const at = { tenant: req.tenant, stream: req.stream, now: clock.now() };
    return { receipt: signTree(signer, at, tree), incarnation };
  }

  /**
   * Step 1's checks of the head read, before anything else: a stream being deleted is
   * ErrStreamNotFound; a request naming another incarnation than the head's (or one of a
   * stream that is gone) is ErrStreamRecreated: its life ended, and writing into the new one
   * would apply a retry there.
   */
  checkLife(req: Pick<AppendRequest, 'stream' | 'incarnation'>, head: ChainHead): void {
    if (head.status === 'deleting') throw new StreamNotFoundError(req.stream);
    if (req.incarnation !== undefined && req.incarnation !== head.incarnation) {
      throw new StreamRecreatedError(req.stream, head.exists ? head.incarnation : undefined);
    }
  }

  /**
   * The stored answer for this request's Idempotency-Key, if it was already committed in
   * this life of the stream (`head`, read before). Another stream's key, or one of the
   * stream's past life, is not this request's.
   */
  async storedResult(req: AppendRequest, head: ChainHead): Promise<AppendOutcome | undefined> {
    if (!req.idempotency) return undefined;
    const item = await this.#storedItem(req.tenant, req.stream, req.idempotency.key, head);
    if (!item) return undefined;
    const record = toIdempotency(item);
    if (record.digest !== req.idempotency.digest) throw new IdempotencyKeyReusedError();
    const response = replayedResponse(record, req.tenant, this.#o.signer);
    const incarnation = response.incarnation ?? head.incarnation;
    return { response: { ...response, ...(incarnation && { incarnation }) }, replayed: true };
  }

  /**
   * The record of `key` in the head's incarnation. A head without one yet (written before
   * incarnations), or given one less than the record TTL ago, also looks up the legacy
   * tenant-wide record, which counts only if it is this stream's, is not expired (DynamoDB
   * deletes expired items late), and was written in this life (not before the head's
   * creation: a record of a stream deleted and created again under the same id is older).
   */
  async #storedItem(
    tenant: string,
    stream: string,
    key: string,
    head: ChainHead,
  ): Promise<Item | undefined> {
    const { records, clock } = this.#o;
    if (isServiceKey(key)) return records.get(idempotencyRecordKey(tenant, stream, '', key));
    // No head, no record: a stream's records go with it (compact-retention.ts, expiry).
    if (!head.exists) return undefined;
    if (head.incarnation !== undefined) {
      const item = await records.get(idempotencyRecordKey(tenant, stream, head.incarnation, key));
      if (item) return item;
    }
    const now = clock.now();
    if (head.incarnation !== undefined && !((head.legacyIdemUntil ?? 0) > now)) return undefined;
    const legacy = await records.get(legacyIdempotencyKey(tenant, key));
    if (!legacy || legacy.stream !== stream) return undefined;
    const expired = typeof legacy.ttl === 'number' && legacy.ttl * 1000 <= now;
    if (expired || !(Number(legacy.createdAt) >= head.createdAt)) return undefined;
    return legacy;
  }

  /**
   * Another writer's segment sits at head+1. Verify it chains from the head, then commit it
   * for them. If it is this very request (same key), answer its result instead, or 409
   * while its writer may still be finishing.
   */
  /**
   * The keys this append seals with. A new stream (head seq 0) with a keyring gets its key
   * (created once, race-safe) and its head records the key's id (`keyId`) at creation. A head
   * with a keyId is sealed for good: without a keyring the append is refused (ErrUnavailable:
   * never written in the clear), and a key record that is missing or names another key is
   * tampering (the compactor deletes it only with the stream). A head without one was written
   * in the clear and stays so; with a keyring, its key record is read (one record read per
   * append of a clear stream, misses are not cached): one there means the head's keyId was
   * stripped (a records-level edit), and the append is refused rather than written in the
   * clear beside sealed segments.
   */
  async #keysFor(req: AppendRequest, head: ChainHead): Promise<StreamKeyset | undefined> {
    const { keyring } = this.#o;
    if (head.seq === 0 && head.keyId === undefined) {
      return keyring?.forWrite(req.tenant, req.stream);
    }
    if (head.keyId === undefined) {
      const stripped = await keyring?.forRead(req.tenant, req.stream);
      if (stripped) {
        throw new TamperedLedgerError(
          head.seq,
          `the stream has key ${stripped.keyId}, its head names none`,
        );
      }
      await this.#chainIsClear(req, head);
      return undefined;
    }
    if (!keyring) throw new ContentSealedError(`stream ${req.stream}`);
    const keyset = await keyring.forRead(req.tenant, req.stream);
    if (keyset?.keyId !== head.keyId) {
      const found = keyset ? `key ${keyset.keyId}` : 'no key record';
      throw new TamperedLedgerError(
        Math.max(1, head.seq),
        `the head is sealed under key ${head.keyId}, the stream has ${found}`,
      );
    }
    return keyset;
  }

  /**
   * A head without a keyId is believed clear only when the chain says so: the segment that
   * ends at the head (its last event's hash is the head's, verified) must be format 1; a
   * format 2 segment there refuses the append (a format 1 one not ending at the head hash is
   * an edited head, which the commit's condition refuses). So a head whose keyId was
   * stripped, with its key record deleted too or on a server without a keyring, still ends
   * in a format 2 segment and is never appended to in the clear. A stream life is one format
   * (sealing starts at its first append), so a hash known clear is remembered: an append
   * after this process's own reads nothing more; one after another writer's reads the last
   * segment once (one index record, one object, its hashes checked). A head whose whole
   * chain was pruned has no segment left to ask and is taken as it stands (docs/privacy.md).
   */
  async #chainIsClear(req: AppendRequest, head: ChainHead): Promise<void> {
    if (head.seq === 0) return;
    const id = `${req.tenant}/${req.stream}`;
    if (this.#clearAt.get(id) === head.hash) return;
    if (head.prunedSeq !== undefined && head.prunedSeq >= head.seq) return;
    const { records, objects } = this.#o;
    for (let attempt = 0; attempt < 3; attempt++) {
      const item = await records.get(segmentIndexKey(req.tenant, req.stream, head.seq));
      if (!item) {
        // the head moved (the commit's condition refuses ours then), or its segment is gone
        const now = await headItem(records, req.tenant, req.stream);
        if (now && now.seq === head.seq && now.hash === head.hash) {
          throw headMismatch(head, 'no segment ends at the head');
        }
        return;
      }
      const index = toSegmentIndex(item);
      const stored = await objects.get(index.objectKey);
      if (!stored) continue; // replaced by a merge in between: read the index again
      const { header } = decodeSegment(
        stored.body,
        { tenant: req.tenant, stream: req.stream, firstSeq: index.firstSeq },
        { verifyOnly: true },
      );
      if (header.format !== 1) {
        throw new TamperedLedgerError(
          head.seq,
          `the chain is sealed (format ${header.format}), its head names no key`,
        );
      }
      // A clear segment that does not end at the head: the head (or its index record) was
      // edited, which the commit's own condition refuses; not remembered as clear.
      if (header.lastSeq === head.seq && header.lastHash === head.hash) {
        this.#rememberClear(id, head.hash);
      }
      return;
    }
    throw new LayoutRaceError(head.seq, 'the last segment kept moving while it was read');
  }

  #rememberClear(id: string, hash: string): void {
    this.#clearAt.delete(id);
    this.#clearAt.set(id, hash);
    if (this.#clearAt.size > CLEAR_HEADS_KEPT) {
      const oldest = this.#clearAt.keys().next().value;
      if (oldest !== undefined) this.#clearAt.delete(oldest);
    }
  }

  async #rollForward(
    req: AppendRequest,
    head: ChainHead,
    key: string,
    ours: Uint8Array,
    keyset: StreamKeyset | undefined,
  ): Promise<AppendOutcome | { replaced: ChainHead } | undefined> {
    const stored = await this.#o.objects.get(key);
    if (!stored) return undefined; // removed in between (compaction): start again
    let decoded: ReturnType<typeof decodeSegment>;
    try {
      decoded = decodeSegment(
        stored.body,
        { tenant: req.tenant, stream: req.stream, firstSeq: head.seq + 1, prevHash: head.hash },
        keyset ? { keys: keyset.segment } : {},
      );
    } catch (err) {
      // Chained on an edited head by an append whose commit was refused: no commit can ever
      // take it, so ours takes its place (one replacer wins), as for a fenced writer's.
      const at = { tenant: req.tenant, stream: req.stream, head };
      if (!(err instanceof TamperedLedgerError)) throw err;
      if (!(await isStrandedOrphan(this.#o.records, at, stored.body))) throw err;
      return this.#replace(key, ours, stored.etag, head);
    }
    const { header, events } = decoded;
    // Its writer's commit checks the lease (its epoch, or with none that no exclusive lease is
    // held). If that check fails now, nobody may adopt it either: replace it with our segment
    // (conditional on its etag: one replacer wins) instead of rolling it forward. A fenced
    // epoch stays fenced; an unfenced writer is first barred for good (lease-orphans.ts).
    const checkpoint = events.some((e) => e.type === DELTA_EVENT);
    const writer: Fence = header.epoch > 0 ? { epoch: header.epoch, checkpoint } : undefined;
    const lease = await this.#o.records.get(writerLeaseKey(req.tenant, req.stream));
    const now = this.#o.clock.now();
    const { records } = this.#o;
    if (
      isFenced(lease, writer, now) ||
      (!writer && (await isRefused(records, req.tenant, req.stream, header)))
    ) {
      const barred = writer ? head : await barOrphanWriter(records, this.#o, { ...req, head, now });
      if (!barred) return undefined;
      return this.#replace(key, ours, stored.etag, barred);
    }
    const batch = sealedEffect(events);
    const effect = stateEffect(batch, head);
    const sameKey = req.idempotency !== undefined && header.idempotencyKey === req.idempotency.key;
    const ttlMs = sameKey ? req.ttlMs : undefined;
    const extra = {
      deltaSeqs: deltaSeqsOf(batch),
      labelled: labelledOf(batch),
      bindings: bindingsOf(batch),
      clears: clearsOf(batch),
      expiry: expiryOf(batch),
      size: stored.body.length,
      ttlMs,
      hashes: events.map((e) => e.hash),
    };
    if (sameKey) {
      if (header.requestDigest !== req.idempotency?.digest) throw new IdempotencyKeyReusedError();
      const age = this.#o.clock.now() - header.createdAt;
      if (age < this.#o.inFlightGraceMs) {
        throw new IdempotencyInProgressError(this.#o.inFlightGraceMs - age);
      }
    }
    let committed: Committed;
    try {
      const segment = {
        ...header,
        ...effect,
        ...extra,
        ...(keyset && { contentKey: keyset.keys.content }),
      };
      const checks = writer ? [] : [notRefusedCheck(req.tenant, req.stream, header)];
      committed = await this.#commit({
        tenant: req.tenant,
        stream: req.stream,
        head,
        segment,
        objectKey: key,
        fence: writer,
        checks,
      });
    } catch (err) {
      // Someone else committed first, or the lease moved since we read it: start again.
      if (err instanceof ConflictError || err instanceof FencedError) return undefined;
      if (err instanceof DrainingError) return undefined;
      throw err;
    }
    if (!sameKey) return undefined;
    const { receipt, incarnation } = committed;
    const response = {
      ...responseOf(header, effect.stateDigest),
      ...(incarnation && { incarnation }),
      ...(receipt && { treeHead: receipt }),
    };
    return { response, replayed: true };
  }

  /** Our segment in place of one nobody may commit (If-Match: one replacer wins). */
  async #replace(
    key: string,
    ours: Uint8Array,
    etag: string,
    head: ChainHead,
  ): Promise<{ replaced: ChainHead } | undefined> {
    try {
      await this.#o.objects.putIfMatch(key, ours, etag, { syncWithCommit: true });
      return { replaced: head };
    } catch (err) {
      if (err instanceof ConflictError) return undefined;
      throw err;
    }
  }

  /**
   * Step 3: move the head over one verified segment, with its index and idempotency records
   * and the tree (tree-commit.ts); answers the receipt and the incarnation committed in. The
   * head's first commit gives it its incarnation; so does the first commit on a head written
   * before incarnations, which also opens the legacy records' 24 h (#storedItem).
   */
  async #commit(at: CommitAt): Promise<Committed> {
    const { tenant, stream, head, segment, objectKey, fence, checks = [], attempt = 0 } = at;
    const now = this.#o.clock.now();
    const hk = headKey(tenant, stream);
    const incarnation = head.incarnation ?? this.#o.ids.newId();
    const ttlSeconds = this.#o.idempotencyTtlSeconds;
    const life: Record<string, JsonValue> =
      head.incarnation !== undefined
        ? {}
        : head.exists
          ? { incarnation, legacyIdemUntil: now + ttlSeconds * 1000 }
          : { incarnation };
    const tree = treeCommit(head, { tenant, stream, now, hashes: segment.hashes }, this.#o.signer);
    const extras = commitExtras(this.#o, {
      tenant,
      stream,
      now,
      head,
      lastSeq: segment.lastSeq,
      deltaSeqs: segment.deltaSeqs,
      labelled: segment.labelled,
      bindings: segment.bindings,
      clears: segment.clears,
      expiry: segment.expiry,
      ttlMs: segment.ttlMs,
      contentKey: segment.contentKey,
    });
    const depth: Record<string, number> =
      segment.stateDepth === undefined ? {} : { stateDepth: segment.stateDepth };
    const tx = new CommitTransaction();
    tx.add(
      { kind: 'head' },
      head.exists
        ? {
            kind: 'update',
            key: hk,
            update: {
              set: {
                seq: segment.lastSeq,
                hash: segment.lastHash,
                stateDigest: segment.stateDigest,
                deltas: segment.deltas,
                stateSeq: segment.stateSeq,
                updatedAt: now,
                ...(head.keyId === undefined && segment.keyId !== undefined
                  ? { keyId: segment.keyId }
                  : {}),
                ...depth,
                ...extras.head,
                ...tree.set,
                ...life,
              },
              ...(segment.stateDepth === undefined && head.stateDepth !== undefined
                ? { remove: ['stateDepth'] }
                : {}),
            },
            conditions: [
              { op: 'eq', attr: 'seq', value: head.seq },
              { op: 'eq', attr: 'epoch', value: head.epoch },
              { op: 'attrNotExists', attr: 'status' },
              head.incarnation === undefined
                ? { op: 'attrNotExists', attr: 'incarnation' }
                : { op: 'eq', attr: 'incarnation', value: head.incarnation },
              ...tree.conditions,
            ],
          }
        : {
            kind: 'put',
            item: {
              ...hk,
              seq: segment.lastSeq,
              hash: segment.lastHash,
              epoch: 0,
              stateDigest: segment.stateDigest,
              deltas: segment.deltas,
              stateSeq: segment.stateSeq,
              createdAt: now,
              updatedAt: now,
              ...(head.digestVersion === undefined ? {} : { digestVersion: head.digestVersion }),
              ...(segment.keyId === undefined ? {} : { keyId: segment.keyId }),
              ...depth,
              ...extras.head,
              ...tree.set,
              ...life,
            },
            conditions: [{ op: 'notExists' }],
          },
    );
    tx.add(
      { kind: 'index' },
      {
        kind: 'put',
        item: {
          ...segmentIndexKey(tenant, stream, segment.lastSeq),
          firstSeq: segment.firstSeq,
          lastSeq: segment.lastSeq,
          prevHash: segment.prevHash,
          lastHash: segment.lastHash,
          objectKey,
          size: segment.size,
          createdAt: segment.createdAt,
          ...tree.index,
        },
        conditions: [{ op: 'notExists' }],
      },
    );
    for (const op of extras.ops) {
      tx.add(
        extras.labelPuts.has(op) && op.kind === 'put'
          ? { kind: 'label', label: labelOfSk(op.item.sk) }
          : { kind: 'extra' },
        op,
      );
    }
    tx.add({ kind: 'extra' }, ...tree.ops);
    if (segment.idempotencyKey !== null && segment.requestDigest !== null) {
      // Unconditional: the head condition already makes this commit the only one; an expired
      // record of a reused key may still be stored and is rightly replaced.
      // The service's own keys never expire (storage-keys.ts): they live as long as the stream.
      const ttl = isServiceKey(segment.idempotencyKey)
        ? {}
        : { ttl: Math.floor(now / 1000) + ttlSeconds };
      tx.add(
        { kind: 'extra' },
        {
          kind: 'put',
          item: {
            ...idempotencyRecordKey(tenant, stream, incarnation, segment.idempotencyKey),
            stream,
            digest: segment.requestDigest,
            status: 201,
            body: {
              ...responseOf(segment, segment.stateDigest),
              incarnation,
            } as unknown as JsonValue,
            // Unsigned: a retry signs it again (idem-receipt.ts).
            ...(tree.receipt && { receipt: storedReceipt(tree.receipt) }),
            createdAt: now,
            ...ttl,
          },
        },
      );
    }
    tx.add({ kind: 'check' }, ...checks);
    const anchor = chainEndCheck(tenant, stream, head);
    if (anchor) tx.add({ kind: 'chain-end' }, anchor);
    // Last, so its refusal means every other condition held: refused by the lease alone.
    tx.add({ kind: 'lease' }, leaseGuard(tenant, stream, fence, now));
    try {
      await tx.commit(this.#o.records);
      return { receipt: tree.receipt, incarnation };
    } catch (err) {
      if (!(err instanceof CommitRefusedError)) throw err;
      const stored = err.current;
      switch (err.refused.kind) {
        case 'lease':
          throw fenceError(stored, { ...fence }, now);
        case 'label':
          throw new LabelExistsError(err.refused.label);
        case 'head':
          if (
            head.exists &&
            stored !== undefined &&
            attempt < 3 &&
            stored.seq === head.seq &&
            stored.epoch === head.epoch &&
            stored.incarnation === head.incarnation &&
            stored.status === undefined
          ) {
            // Same seq and epoch, other tree or witness fields: the backfill or the witness
            // wrote them after our read (tree-commit.ts). Commit again on the head as it is.
            const fresh = await this.readHead(tenant, stream);
            return this.#commit({ ...at, head: fresh, attempt: attempt + 1 });
          }
          throw err;
        case 'chain-end': {
          // The head held but is not the chain end. Tampering, unless the head was pruned up
          // to its seq meanwhile (the cleanup deletes that record): then commit on the pruned
          // head.
          const current = await this.readHead(tenant, stream);
          if (current.seq !== head.seq || current.epoch !== head.epoch) throw err; // a race
          if (current.prunedSeq === head.prunedSeq || current.hash !== head.hash) {
            // The segment stays at head+1, chained on a hash no commit accepts: after the
            // head's repair the next append replaces it (isStrandedOrphan).
            throw headMismatch(head, 'the head hash is not the end of the chain');
          }
          return this.#commit({ ...at, head: current });
        }
        default:
          throw err;
      }
    }
  }

  /**
   * Whether the chain holds our last event. Its index record may since have been merged into
   * a later one by the compactor: then the covering segment must hold our event's hash.
   */
  async #isCommitted(
    tenant: string,
    stream: string,
    ours: { lastSeq: number; lastHash: string },
  ): Promise<boolean> {
    const item = await this.#o.records.get(segmentIndexKey(tenant, stream, ours.lastSeq));
    if (item) return item.lastHash === ours.lastHash;
    const page = await this.#o.records.query(streamPk(tenant, stream), {
      skPrefix: SEGMENT_INDEX_PREFIX,
      after: `${SEGMENT_INDEX_PREFIX}${pad16(ours.lastSeq - 1)}`,
      limit: 1,
    });
    const cover = page.items[0] && toSegmentIndex(page.items[0]);
    if (!cover || cover.firstSeq > ours.lastSeq) return false;
    const stored = await this.#o.objects.get(cover.objectKey);
    if (!stored) return false;
    const { events } = decodeSegment(stored.body, {
      tenant,
      stream,
      firstSeq: cover.firstSeq,
      prevHash: cover.prevHash,
    });
    return events.find((e) => e.seq === ours.lastSeq)?.hash === ours.lastHash;
  }
}

/** One commit's inputs (#commit): the head it moves, the verified segment, its object. */
interface CommitAt {
  tenant: string;
  stream: string;
  head: ChainHead;
  segment: CommitSegment;
  objectKey: string;
  fence: Fence;
  /** Conditions a caller adds (a rolled-forward writer's: that it was not refused). */
  checks?: TransactOp[];
  /** How many times the head's tree or witness fields moved under this commit already. */
  attempt?: number;
}

/** What a commit answers: its receipt (none without a signer or a tree) and incarnation. */
interface Committed {
  receipt?: SignedTreeHead;
  incarnation?: string;
}
