import { randomUUID } from 'node:crypto';
import { HefestoApiError, type HefestoClient } from '@hefesto/client';

/**
 * Exclusive leases per thread for `new HefestoSaver({ exclusive: true })`: one worker at a
 * time runs a thread; a second one is refused with ErrFenced before it runs anything.
 *
 * Every stream of the thread the saver touches (one per namespace) gets an exclusive Hefesto
 * lease owned by this saver, and every write to it carries the lease's epoch as fencing
 * token, so the server refuses (ErrFenced) a write of a worker whose lease was taken over, in
 * the same transaction that would move the head. Streams are leased lazily:
 *
 *   1. `getTuple` (the first thing an invoke does) takes the lease, or takes it again when
 *      this saver held it before and lost it (expired, handed over) and the thread is free;
 *      another owner's live lease is ThreadFencedError (code ErrFenced), nothing run;
 *   2. `put`/`putWrites` take it only if this saver never held it (a caller that writes
 *      without reading first); a lease lost mid-run is never taken again here, so the run's
 *      next write is refused by the server instead of continuing on a thread someone else
 *      now runs;
 *   3. while held, a timer renews it every ttl/3 (unref'd: it keeps no process alive), until
 *      `release`/`handOver`/`close`, or until the thread has been idle for `idleMs`;
 *   4. a crashed worker's lease expires after ttl; the next worker then takes it.
 */

/** A worker refused because another one holds the thread (or took it over). */
export class ThreadFencedError extends HefestoApiError {
  constructor(threadId: string, detail: string, cause?: unknown) {
    super(
      'ErrFenced',
      409,
      `thread ${threadId} is leased by another worker (exclusive: true): ${detail}`,
      undefined,
      { cause },
    );
    this.name = 'ThreadFencedError';
  }
}

export interface ThreadLeaseOptions {
  /** This worker's name in the lease (default: a random UUID per saver). */
  owner?: string;
  /** Lease time to live, ms (1000..300000; default 30000). */
  ttlMs?: number;
  /** Stop renewing after this long without a saver call on the thread (default 10 min). */
  idleMs?: number;
}

interface Held {
  threadId: string;
  epoch: number;
  lost: boolean;
  usedAt: number;
  timer?: ReturnType<typeof setInterval>;
}

const codeOf = (err: unknown) => (err instanceof HefestoApiError ? err.code : undefined);

export class ThreadLeases {
  readonly owner: string;
  readonly #ttlMs: number;
  readonly #idleMs: number;
  readonly #held = new Map<string, Held>();

  constructor(
    readonly client: HefestoClient,
    options: ThreadLeaseOptions = {},
  ) {
    this.owner = options.owner ?? `lg-${randomUUID()}`;
    this.#ttlMs = options.ttlMs ?? 30_000;
    this.#idleMs = options.idleMs ?? 600_000;
  }

  /** Step 1 (`reading`) or 2: holds the stream's lease before the saver touches it. */
  async ensure(stream: string, threadId: string, reading: boolean): Promise<void> {
    const held = this.#held.get(stream);
    if (held && !held.lost) {
      held.usedAt = Date.now();
      return;
    }
    if (held && !reading) return; // lost mid-run: the server fences the write (step 2)
    let epoch: number;
    try {
      ({ epoch } = await this.client.acquireLease(stream, {
        owner: this.owner,
        ttlMs: this.#ttlMs,
        exclusive: true,
      }));
    } catch (err) {
      if (codeOf(err) === 'ErrLeaseHeld' || codeOf(err) === 'ErrFenced') {
        throw new ThreadFencedError(threadId, (err as Error).message, err);
      }
      // A thread being deleted refuses leases (404): a read finds nothing there, unfenced.
      if (reading && codeOf(err) === 'ErrStreamNotFound') return;
      throw err;
    }
    this.#stop(held);
    const next: Held = { threadId, epoch, lost: false, usedAt: Date.now() };
    next.timer = setInterval(() => void this.#renew(stream, next), Math.floor(this.#ttlMs / 3));
    next.timer.unref?.();
    this.#held.set(stream, next);
    this.client.setFence(stream, epoch);
  }

  /** Step 3. */
  async #renew(stream: string, held: Held): Promise<void> {
    if (Date.now() - held.usedAt > this.#idleMs) {
      this.#stop(held);
      return;
    }
    try {
      await this.client.renewLease(stream, {
        owner: this.owner,
        epoch: held.epoch,
        ttlMs: this.#ttlMs,
      });
    } catch (err) {
      const code = codeOf(err);
      if (code === 'ErrFenced' || code === 'ErrLeaseHeld' || code === 'ErrStreamNotFound') {
        held.lost = true;
        this.#stop(held);
      }
      // Anything else (network): the next tick tries again, well inside the ttl.
    }
  }

  #stop(held: Held | undefined): void {
    if (held?.timer !== undefined) clearInterval(held.timer);
    if (held) held.timer = undefined;
  }

  #streams(threadId?: string): Array<[string, Held]> {
    return [...this.#held].filter(([, h]) => threadId === undefined || h.threadId === threadId);
  }

  #forget(stream: string, held: Held): void {
    this.#stop(held);
    this.#held.delete(stream);
    this.client.setFence(stream, undefined);
  }

  /** Releases this saver's leases of a thread (every thread when none is named). */
  async release(threadId?: string): Promise<void> {
    for (const [stream, held] of this.#streams(threadId)) {
      this.#forget(stream, held);
      if (held.lost) continue;
      await this.client
        .releaseLease(stream, { owner: this.owner, epoch: held.epoch })
        .catch((err: unknown) => {
          if (codeOf(err) !== 'ErrFenced') throw err;
        });
    }
  }

  /**
   * Hands a thread over to another worker: drains each of its streams (in-flight writes
   * settle, a base snapshot is written, the lease released), so the next worker's first read
   * takes the lease and continues from the drained head. A stream leased but never written
   * has nothing to drain and is released.
   */
  async handOver(threadId: string, graceMs = 5_000): Promise<void> {
    for (const [stream, held] of this.#streams(threadId)) {
      this.#forget(stream, held);
      if (held.lost) continue;
      const lease = { owner: this.owner, epoch: held.epoch };
      await this.client.drain(stream, { ...lease, graceMs }).catch(async (err: unknown) => {
        if (codeOf(err) === 'ErrStreamNotFound') return this.client.releaseLease(stream, lease);
        if (codeOf(err) !== 'ErrFenced') throw err;
      });
    }
  }
}
