import {
  emptyStateDigest,
  HefestoApiError,
  type HefestoClient,
  type Json,
  type StateValue,
} from '@hefesto/client';
import {
  applyChange,
  type Change,
  expiryOf,
  type NamespaceState,
  opsOf,
} from './namespace-state.js';

/**
 * The namespaces' streams as this store holds them: the last verified state of each stream
 * it read or wrote (so a read asks only for what changed since: `unchanged`, or the deltas),
 * and the write loop, one at a time per stream:
 *
 * 1. the change is made from the held state (read first if none is held);
 * 2. it is sent as one checkpoint on that state's digest;
 * 3. refused because another worker moved the stream (ErrDivergenceDetected): read the
 *    deltas since, make the change again from the new state, send again (at most 8 times).
 *
 * Each checkpoint carries the state's earliest item expiry as its `expiry` hint, so the
 * compactor deletes expired items from the state (namespace-state.ts expiryOf).
 *
 * So two workers' puts of one key are applied one after the other: the last one the server
 * commits wins, whole. A reply lost after the commit is retried by the client with the same
 * Idempotency-Key and answers the same receipt.
 */

const EMPTY_DIGEST = emptyStateDigest(2);
const MAX_ATTEMPTS = 8;

interface Held {
  seq: number;
  stateDigest: string;
  state: NamespaceState | null;
}

export const notFound = (err: unknown) =>
  err instanceof HefestoApiError &&
  (err.code === 'ErrNotFound' || err.code === 'ErrStreamNotFound');

const lostRace = (err: unknown) =>
  err instanceof HefestoApiError &&
  (err.code === 'ErrDivergenceDetected' || err.code === 'ErrSeqConflict');

export class NamespaceStreams {
  readonly #client: HefestoClient;
  readonly #held = new Map<string, Held>();
  readonly #queues = new Map<string, Promise<unknown>>();
  readonly #maxHeld: number;

  constructor(client: HefestoClient, maxHeld: number) {
    this.#client = client;
    this.#maxHeld = maxHeld;
  }

  /** The state this store holds for the stream: null, it has none; undefined, not known. */
  known(stream: string): NamespaceState | null | undefined {
    return this.#held.get(stream)?.state;
  }

  /** The stream's state now (null: no such namespace): one conditional request. */
  async read(stream: string): Promise<NamespaceState | null> {
    const held = this.#held.get(stream);
    // A copy: the client applies the deltas to `since.state` in place, and the held state is
    // shared with the reads and writes in flight (a write's reply replaces it, never changes it).
    const since =
      held?.state && held.seq > 0
        ? {
            seq: held.seq,
            stateDigest: held.stateDigest,
            state: structuredClone(held.state) as unknown as { [k: string]: Json },
          }
        : undefined;
    try {
      const t = await this.#client.getCheckpointTuple(stream, { since });
      const state = t.state as unknown as NamespaceState;
      this.#hold(stream, { seq: t.seq, stateDigest: t.stateDigest, state });
      return state;
    } catch (err) {
      this.#held.delete(stream);
      if (!notFound(err)) throw err;
      this.#hold(stream, { seq: 0, stateDigest: EMPTY_DIGEST, state: null });
      return null;
    }
  }

  /**
   * One path of the stream's state (null: no such stream or path): one request, served from
   * the server's verified state but not checked by this client, even with `verify`.
   */
  async readPath(stream: string, path: string): Promise<StateValue | null> {
    try {
      return await this.#client.getValue(stream, path);
    } catch (err) {
      if (notFound(err) || (err instanceof HefestoApiError && err.status === 404)) return null;
      throw err;
    }
  }

  /** Applies `make(state)` (null: nothing to write) as one checkpoint, in turn with this stream's other writes. */
  write(stream: string, make: (state: NamespaceState | null) => Change | null): Promise<void> {
    const prev = this.#queues.get(stream) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(() => this.#write(stream, make));
    this.#queues.set(stream, next);
    void next.finally(() => {
      if (this.#queues.get(stream) === next) this.#queues.delete(stream);
    });
    return next;
  }

  async #write(stream: string, make: (state: NamespaceState | null) => Change | null) {
    for (let attempt = 1; ; attempt++) {
      let held = this.#held.get(stream);
      if (!held) {
        await this.read(stream);
        held = this.#held.get(stream) as Held;
      }
      const change = make(held.state);
      if (change === null) return;
      const ops = opsOf(change, held.state);
      if (ops.length === 0) return;
      const state = applyChange(change, held.state);
      const expiry = expiryOf(state);
      try {
        const res = await this.#client.checkpoint(stream, {
          ops,
          baseDigest: held.stateDigest,
          ...(expiry ? { expiry } : {}),
        });
        this.#hold(stream, { seq: res.seq, stateDigest: res.stateDigest, state });
        return;
      } catch (err) {
        if (!lostRace(err) || attempt >= MAX_ATTEMPTS) {
          this.#held.delete(stream);
          throw err;
        }
        await this.read(stream); // another worker wrote: its deltas, then make it again
      }
    }
  }

  #hold(stream: string, held: Held) {
    this.#held.delete(stream);
    this.#held.set(stream, held);
    if (this.#held.size > this.#maxHeld) {
      const oldest = this.#held.keys().next().value;
      if (oldest !== undefined) this.#held.delete(oldest);
    }
  }
}
