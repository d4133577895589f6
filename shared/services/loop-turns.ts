import type { ChunkSource } from '../domain/state-v2/index.js';

/**
 * Turns of the event loop during long work on large states (issue 21: no request blocks the
 * loop for more than 100 ms at a time). Reading, measuring, hashing, writing and serializing
 * a 64 MiB value is seconds of CPU, in thousands of small steps (a chunk verified, a batch of
 * entries assembled, a page encoded); chunks served from memory resolve at once, so without
 * turns the steps run back to back as one long turn and /healthz waits behind them.
 *
 * One pacer for the whole process: every step calls `pause()` first, which answers undefined
 * while the current slice of synchronous work is under `sliceMs`, else a promise settled on
 * a later turn of the loop, with a fresh slice. All the steps of all the requests share the
 * slice, so many concurrent steps (a read fans out over a tree) cannot each take a slice of
 * their own in one turn: the waiters all wake on the same turn, and each checks again before
 * its step, so the ones past the slice wait for the next turn (the loop runs its I/O and
 * timers in between: setImmediate callbacks queued during a turn run on the next).
 *
 *   turn n:   step, step, ..., step (slice spent)  -> the rest wait
 *   (poll: sockets, timers: /healthz answered)
 *   turn n+1: a fresh slice: the waiters, in order, until it is spent again
 */

export interface PacerOptions {
  /** Synchronous work in one turn before steps wait for the next. Default 10 ms. */
  sliceMs?: number;
  /** The clock the slice is measured by (ms). */
  now?: () => number;
}

export class Pacer {
  readonly sliceMs: number;
  readonly #now: () => number;
  #sliceStart: number;
  #next: Promise<void> | undefined;
  #turns = 0;

  constructor(options: PacerOptions = {}) {
    this.sliceMs = options.sliceMs ?? 10;
    this.#now = options.now ?? (() => performance.now());
    this.#sliceStart = this.#now();
  }

  /** Turns of the loop the steps waited for, since the pacer was made (tests count them). */
  get turns(): number {
    return this.#turns;
  }

  /** Undefined while the slice lasts (no await needed), else the next turn with a slice left. */
  readonly pause = (): Promise<void> | undefined => (this.#spent() ? this.#wait() : undefined);

  #spent(): boolean {
    return this.#now() - this.#sliceStart >= this.sliceMs;
  }

  async #wait(): Promise<void> {
    do await this.#turn();
    while (this.#spent());
  }

  #turn(): Promise<void> {
    this.#next ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        this.#next = undefined;
        this.#sliceStart = this.#now();
        this.#turns++;
        resolve();
      }),
    );
    return this.#next;
  }

  /**
   * A source whose fetches pause before and after: before, so a fan-out of fetches that do
   * work of their own (a local store reads and inflates) spreads over turns; after, so the
   * caller's step on the bytes (verify, parse) starts with a slice left.
   */
  source(source: ChunkSource): ChunkSource {
    return async (hash) => {
      const before = this.pause();
      if (before) await before;
      const bytes = await source(hash);
      const after = this.pause();
      if (after) await after;
      return bytes;
    };
  }
}

/** The process's pacer: one event loop, one slice. */
export const loopPacer = new Pacer();
