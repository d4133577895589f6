import { genesisHash } from '../domain/event.js';
import { eventLeafHash, extendFrontier, frontierRoot, hashToHex } from '../domain/merkle/index.js';
import { HeadKeys, type SignedTreeHead } from '../domain/signed-head.js';
import { verifyEvents } from '../domain/verify.js';
import type { ProofGet } from './client-proofs.js';
import { ClientVerificationError, HefestoApiError } from './errors.js';
import {
  checkConsistency,
  TamperedHistoryError,
  verifyEventInclusion,
  verifyReceipt,
} from './proofs.js';
import { TrustedHeads, type TrustStore } from './trust-store.js';
import type { LedgerEvent } from './types.js';

/**
 * A whole-stream audit (`hefesto audit STREAM`; docs/proofs.md, "What a client checks"):
 *
 *   1. The signed head now, under the published keys, for this tenant and stream.
 *   2. Every event, page by page: each hash recomputed and linked from the genesis of
 *      (tenant, stream), and the RFC 9162 tree rebuilt from the chain hashes; its root at the
 *      head's size must be the signed root (a rewritten event, a missing or extra one, all
 *      fail). A pruned stream has no events below its pruning point: from there on, the
 *      chain is checked from the first kept event and each page's last event by an inclusion
 *      proof.
 *   3. Every witnessed head of the stream (published to write-once storage by the compactor):
 *      signed, and a prefix of the head now by a consistency proof; a witnessed head larger
 *      than the head now is a truncation, one not consistent is a rewrite.
 *   4. The head this client trusted before (trust store): consistent with the head now, which
 *      then becomes the trusted head. Only after 2 and 3 passed.
 *
 * Throws TamperedHistoryError (truncated / rewritten) or ClientVerificationError.
 */

/**
 * A head as the witness published it, for {@link auditStream}.
 *
 * @example
 * ```ts
 * const input: WitnessedInput = { head: published, publishedAt: 1767225601000, where: 'w/acme/…json@v1' };
 * ```
 */
export interface WitnessedInput {
  /** The head as published (not trusted: verified here). */
  head: unknown;
  publishedAt: number;
  /** Where it was read, for messages. */
  where: string;
}

/**
 * Options of {@link auditStream}.
 *
 * @example
 * ```ts
 * const options: AuditOptions = { baseUrl, tenant: 'acme', streamId: 'run-1', get, trustStore };
 * ```
 */
export interface AuditOptions {
  baseUrl: string;
  tenant: string;
  streamId: string;
  get: ProofGet;
  trustStore: TrustStore;
  witnessed?: WitnessedInput[];
  onProgress?: (seq: number, of: number) => void;
  now?: () => number;
}

/**
 * What a passed audit found.
 *
 * @example
 * ```ts
 * const { head, events, witness } = await auditStream(options);
 * console.log(head.treeSize, events, witness?.newest?.ageMs);
 * ```
 */
export interface AuditResult {
  head: SignedTreeHead;
  /** Events read and checked. */
  events: number;
  /** Whether the chain and the tree were checked from the stream's first event. */
  fromGenesis: boolean;
  /** The trusted head before this audit, if any. */
  trustedBefore?: number;
  witness?: {
    heads: number;
    /** Published heads of the stream that did not verify (forged versions), ignored. */
    invalid: string[];
    newest?: { treeSize: number; publishedAt: number; ageMs: number };
  };
}

const PAGE = 1000;
const enc = encodeURIComponent;

/**
 * A witnessed head that contradicts the head now; says where it was published.
 *
 * @example
 * ```ts
 * try { await auditStream(options); } catch (err) {
 *   if (err instanceof WitnessContradictionError) console.error(err.message, err.where);
 * }
 * ```
 */
export class WitnessContradictionError extends TamperedHistoryError {
  readonly where: string;

  constructor(
    cause: TamperedHistoryError,
    witnessed: SignedTreeHead,
    current: SignedTreeHead,
    where: string,
  ) {
    super(cause.reason, witnessed, current);
    this.message = `${this.message} (a head the witness published: ${where})`;
    this.where = where;
  }
}

/**
 * A head the witness published is signed by a key the server neither signs with nor lists as
 * retired (`GET /v1/signing-keys`): the server's signing key was lost or replaced without a
 * rotation (which keeps the old public key published), or the head was forged. Either way
 * the published heads cannot be checked, so the audit fails instead of ignoring them.
 *
 * @example
 * ```ts
 * try { await auditStream(options); } catch (err) {
 *   if (err instanceof UnknownWitnessKeyError) console.error(err.keyId, err.where);
 * }
 * ```
 */
export class UnknownWitnessKeyError extends ClientVerificationError {
  readonly keyId: string;
  readonly where: string;

  constructor(keyId: string, where: string, head: unknown) {
    const size = (head as { treeSize?: unknown } | null)?.treeSize;
    super(
      0,
      `a head the witness published (${where}${typeof size === 'number' ? `, tree size ${size}` : ''}) ` +
        `is signed by key ${keyId}, which the server neither signs with nor lists as retired: ` +
        'its signing key was lost or replaced without a rotation (hefesto keys rotate-signing ' +
        'keeps the old public key published), or the head is forged',
    );
    this.name = 'UnknownWitnessKeyError';
    this.keyId = keyId;
    this.where = where;
  }
}

/**
 * Audits one stream (steps above); throws on any finding.
 *
 * @example
 * ```ts
 * const result = await auditStream({ baseUrl, tenant: 'acme', streamId: 'run-1', get, trustStore });
 * ```
 */
export const auditStream = async (o: AuditOptions): Promise<AuditResult> => {
  const scope = { tenant: o.tenant, streamId: o.streamId };
  const keys = new HeadKeys(await o.get('/v1/signing-keys'));
  // 1. The head now.
  const head = verifyReceipt(await o.get(`/v1/streams/${enc(o.streamId)}/tree-head`), keys, scope);
  // 2. The events and the tree.
  const walked = await walkEvents(o, head);
  // 3. The witness.
  const witness = o.witnessed && (await checkWitness(o, keys, head));
  // 4. The trust store.
  const trust = new TrustedHeads(o.trustStore);
  const key = { baseUrl: o.baseUrl, tenant: o.tenant, stream: o.streamId };
  const before = await o.trustStore.get(key);
  await trust.advance(key, head, (from, to) => consistency(o, from, to));
  return {
    head,
    ...walked,
    ...(before ? { trustedBefore: before.treeSize } : {}),
    ...(witness ? { witness } : {}),
  };
};

const consistency = (o: AuditOptions, from: number, to: number) =>
  o.get(`/v1/streams/${enc(o.streamId)}/proofs/consistency`, { from, to });

const page = (o: AuditOptions, from: number) =>
  o.get(`/v1/streams/${enc(o.streamId)}/events`, { from, limit: PAGE }) as Promise<{
    events: LedgerEvent[];
    next: number | null;
  }>;

const walkEvents = async (
  o: AuditOptions,
  head: SignedTreeHead,
): Promise<{ events: number; fromGenesis: boolean }> => {
  const last = head.treeBase + head.treeSize;
  let from = head.treeBase + 1;
  let first: Awaited<ReturnType<typeof page>> | undefined;
  let fromGenesis = head.treeBase === 0;
  if (head.treeSize === 0) return { events: 0, fromGenesis };
  try {
    first = await page(o, from);
  } catch (err) {
    if (!(err instanceof HefestoApiError) || err.code !== 'ErrPruned') throw err;
    fromGenesis = false;
    // The refusal names the pruning point (ErrPruned problems carry prunedSeq).
    const prunedSeq = (err.problem as { prunedSeq?: unknown } | undefined)?.prunedSeq;
    if (typeof prunedSeq !== 'number') throw err;
    from = Math.max(from, prunedSeq + 1);
  }
  if (head.treeBase > 0) fromGenesis = false;
  let point = fromGenesis ? { seq: 0, hash: genesisHash(o.tenant, o.streamId) } : undefined;
  let frontier: Uint8Array[] = [];
  let size = 0;
  let checked = 0;
  let current = first;
  while (from <= last) {
    current ??= await page(o, from);
    const events = current.events.filter((e) => e.seq <= last);
    current = undefined;
    if (events.length === 0) {
      throw new ClientVerificationError(
        from,
        `the events end at seq ${from - 1}, below the signed tree of ${head.treeSize} leaves`,
      );
    }
    point ??= {
      seq: (events[0] as LedgerEvent).seq - 1,
      hash: (events[0] as LedgerEvent).prevHash,
    };
    const result = verifyEvents(events as never, point);
    if (!result.ok) throw new ClientVerificationError(result.firstBadSeq, result.reason);
    point = { seq: result.seq, hash: result.hash };
    if (fromGenesis) {
      frontier = extendFrontier(
        frontier,
        size,
        events.map((e) => eventLeafHash(e.hash)),
      );
      size += events.length;
    } else {
      const tail = events.at(-1) as LedgerEvent;
      const proof = await o.get(`/v1/streams/${enc(o.streamId)}/proofs/inclusion`, {
        seq: tail.seq,
        treeSize: head.treeSize,
      });
      verifyEventInclusion(head, tail, proof);
    }
    checked += events.length;
    from = point.seq + 1;
    o.onProgress?.(point.seq, last);
  }
  if (fromGenesis && hashToHex(frontierRoot(frontier, size)) !== head.rootHash) {
    throw new ClientVerificationError(
      1,
      `the events are not the signed tree of ${head.treeSize} leaves (its root differs)`,
    );
  }
  return { events: checked, fromGenesis };
};

const checkWitness = async (o: AuditOptions, keys: HeadKeys, head: SignedTreeHead) => {
  const invalid: string[] = [];
  const heads: Array<{ head: SignedTreeHead; publishedAt: number; where: string }> = [];
  for (const w of o.witnessed ?? []) {
    const kid = (w.head as { keyId?: unknown } | null)?.keyId;
    if (typeof kid === 'string' && !keys.keyIds.includes(kid)) {
      throw new UnknownWitnessKeyError(kid, w.where, w.head);
    }
    try {
      heads.push({
        head: verifyReceipt(w.head, keys, { tenant: o.tenant, streamId: o.streamId }),
        publishedAt: w.publishedAt,
        where: w.where,
      });
    } catch (err) {
      invalid.push(`${w.where}: ${(err as Error).message}`);
    }
  }
  // Largest first: a truncation below the newest published head is the finding to report.
  heads.sort((a, b) => b.head.treeSize - a.head.treeSize);
  const proofs = new Map<number, unknown>();
  for (const w of heads) {
    try {
      let proof: unknown;
      if (w.head.treeBase === head.treeBase && w.head.treeSize < head.treeSize) {
        if (!proofs.has(w.head.treeSize))
          proofs.set(w.head.treeSize, await consistency(o, w.head.treeSize, head.treeSize));
        proof = proofs.get(w.head.treeSize);
      }
      checkConsistency(w.head, head, proof);
    } catch (err) {
      if (err instanceof TamperedHistoryError) {
        throw new WitnessContradictionError(err, w.head, head, w.where);
      }
      throw err;
    }
  }
  const newest = heads.reduce<(typeof heads)[number] | undefined>(
    (a, b) => (a === undefined || b.publishedAt > a.publishedAt ? b : a),
    undefined,
  );
  const now = o.now?.() ?? Date.now();
  return {
    heads: heads.length,
    invalid,
    ...(newest
      ? {
          newest: {
            treeSize: newest.head.treeSize,
            publishedAt: newest.publishedAt,
            ageMs: now - newest.publishedAt,
          },
        }
      : {}),
  };
};
