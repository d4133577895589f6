import { HeadKeys, type SignedTreeHead } from '../domain/signed-head.js';
import { ClientVerificationError, HefestoApiError } from './errors.js';
import { TamperedHistoryError, verifyEventInclusion, verifyReceipt } from './proofs.js';
import { TrustedHeads, type TrustKey, type TrustStore } from './trust-store.js';

/**
 * What a client with `verify: true` checks of the server's signed word (docs/proofs.md,
 * "What a client checks"), on top of the hash chain it recomputes itself:
 *
 * - every receipt (append, checkpoint): signed by a published key, for this stream, and a
 *   prefix of (or an extension of) the last head this client trusted;
 * - every verified read: the signed head now, consistent with the trusted head (the trust
 *   store keeps it across processes), and the page's last event in that tree (one inclusion
 *   proof: its chain hash commits to every event before it).
 *
 * - before this client's first write to a stream it trusts a head of: the signed head now,
 *   consistent with that one, so that nothing lands on a server that no longer holds the
 *   history this client verified (its data reset, or rewritten).
 *
 * A truncated or rewritten stream raises `TamperedHistoryError` (code ErrTamperedLedger) with
 * the reason; its message names the trust store and the command that forgets a server. A stream the server has no tree for yet (written before trees) is checked by
 * its chain alone, unless a signed head of it was trusted before: then losing the tree is
 * itself refused.
 */

/**
 * How the proof checker reaches the server: a GET answering parsed JSON (the client's
 * transport, with its retries).
 *
 * @example
 * ```ts
 * const get: ProofGet = async (path, query) => (await transport.call('GET', path, { query })).body;
 * ```
 */
export type ProofGet = (
  path: string,
  query?: Record<string, string | number | undefined>,
) => Promise<unknown>;

/**
 * Options of {@link ProofChecker}.
 *
 * @example
 * ```ts
 * const options: ProofCheckerOptions = { baseUrl, tenant: 'acme', trustStore, get };
 * ```
 */
export interface ProofCheckerOptions {
  baseUrl: string;
  tenant: string;
  trustStore: TrustStore;
  get: ProofGet;
}

const enc = encodeURIComponent;

/**
 * Checks receipts and reads against signed tree heads, keeping the last verified head per
 * stream in a trust store. HefestoClient uses one when `verify` is on.
 *
 * @example
 * ```ts
 * const checker = new ProofChecker({ baseUrl, tenant: 'acme', trustStore: new MemoryTrustStore(), get });
 * await checker.checkReceipt('run-1', appendResponse.treeHead);
 * await checker.checkRead('run-1', page.events.at(-1));
 * ```
 */
export class ProofChecker {
  readonly #o: ProofCheckerOptions;
  readonly #trust: TrustedHeads;
  #keys: Promise<HeadKeys> | undefined;

  constructor(options: ProofCheckerOptions) {
    this.#o = options;
    this.#trust = new TrustedHeads(options.trustStore);
  }

  #key(streamId: string): TrustKey {
    return { baseUrl: this.#o.baseUrl, tenant: this.#o.tenant, stream: streamId };
  }

  /** The published keys; read again once when a head names a key not in them (rotation). */
  async #verified(streamId: string, raw: unknown): Promise<SignedTreeHead> {
    const scope = { tenant: this.#o.tenant, streamId };
    this.#keys ??= this.#fetchKeys();
    const keys = await this.#keys;
    const kid = (raw as { keyId?: unknown } | null)?.keyId;
    if (typeof kid === 'string' && !keys.keyIds.includes(kid)) {
      this.#keys = this.#fetchKeys();
      return verifyReceipt(raw, await this.#keys, scope);
    }
    return verifyReceipt(raw, keys, scope);
  }

  async #fetchKeys(): Promise<HeadKeys> {
    const keys = new HeadKeys(await this.#o.get('/v1/signing-keys'));
    return keys;
  }

  #consistency(streamId: string) {
    return (from: number, to: number) =>
      this.#o.get(`/v1/streams/${enc(streamId)}/proofs/consistency`, { from, to });
  }

  /**
   * Verifies an append's or checkpoint's receipt and moves the trusted head on. A missing
   * receipt passes only for a stream with no trusted head (the server has no tree for it).
   */
  async checkReceipt(streamId: string, receipt: unknown): Promise<SignedTreeHead | undefined> {
    if (receipt === undefined) {
      await this.#noTree(streamId, 'an append answered without a receipt');
      return undefined;
    }
    const head = await this.#verified(streamId, receipt);
    await this.#advance(streamId, head, { receipt: true });
    return head;
  }

  /**
   * Before the first write of this client to a stream: when a head of it is trusted, the
   * server's head now must extend it (one GET, and a consistency proof when it grew). A stream
   * never trusted costs nothing (its first receipt is trusted on first use).
   */
  async checkBeforeWrite(streamId: string): Promise<void> {
    if ((await this.trusted(streamId)) === undefined) return;
    await this.checkRead(streamId, undefined);
  }

  /**
   * After a verified read: the signed head now must extend the trusted one, and `last` (the
   * last event the read verified by its chain) must be in its tree.
   */
  async checkRead(
    streamId: string,
    last: { seq: number; hash: string } | undefined,
  ): Promise<SignedTreeHead | undefined> {
    let raw: unknown;
    try {
      raw = await this.#o.get(`/v1/streams/${enc(streamId)}/tree-head`);
    } catch (err) {
      if (!(err instanceof HefestoApiError)) throw err;
      if (err.code === 'ErrStreamNotFound') {
        await this.#noTree(streamId, 'the server has no such stream');
        throw err;
      }
      if (err.code !== 'ErrNotFound') throw err;
      await this.#noTree(streamId, 'the server has no tree for the stream');
      return undefined;
    }
    const head = await this.#verified(streamId, raw);
    await this.#advance(streamId, head);
    if (last === undefined || last.seq <= head.treeBase) return head;
    if (last.seq > head.treeBase + head.treeSize) {
      throw new ClientVerificationError(
        last.seq,
        `the server returned seq ${last.seq}, past its signed tree of ${head.treeSize} leaves`,
      );
    }
    const proof = await this.#o.get(`/v1/streams/${enc(streamId)}/proofs/inclusion`, {
      seq: last.seq,
      treeSize: head.treeSize,
    });
    verifyEventInclusion(head, last, proof);
    return head;
  }

  /** The last verified head of a stream, if any. */
  trusted(streamId: string): Promise<SignedTreeHead | undefined> {
    return this.#o.trustStore.get(this.#key(streamId));
  }

  async #advance(
    streamId: string,
    head: SignedTreeHead,
    options: { receipt?: boolean } = {},
  ): Promise<void> {
    try {
      await this.#trust.advance(this.#key(streamId), head, this.#consistency(streamId), options);
    } catch (err) {
      if (err instanceof TamperedHistoryError) throw this.#hinted(streamId, err);
      throw err;
    }
  }

  async #noTree(streamId: string, what: string): Promise<void> {
    const trusted = await this.trusted(streamId);
    if (trusted !== undefined) {
      const err = new ClientVerificationError(
        trusted.treeBase + 1,
        `${what}, but this client trusts a signed head of it (tree size ${trusted.treeSize})`,
      );
      throw this.#hinted(streamId, err);
    }
  }

  /** Says where the contradicted head is kept, and how to forget a server reset on purpose. */
  #hinted<E extends ClientVerificationError>(streamId: string, err: E): E {
    const { baseUrl, trustStore } = this.#o;
    const where = trustStore.location ? `the trust file ${trustStore.location}` : 'its trust store';
    err.message +=
      `. This client keeps the signed heads it verified in ${where} (${baseUrl}, stream ` +
      `${streamId}). If that server's data was reset on purpose, forget its heads with ` +
      `\`hefesto trust forget ${baseUrl}\` (the same trust file: $HEFESTO_TRUST_FILE); ` +
      'otherwise the server lost or rewrote history it signed';
    return err;
  }
}
