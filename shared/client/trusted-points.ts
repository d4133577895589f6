/**
 * Chain points (seq -> hash) a client has verified itself, per stream, bounded. A verified read continues from the nearest one instead of from genesis.
 *
 * @example
 * ```ts
 * const points = new TrustedPoints();
 * points.add('run-1', 10, hash);
 * points.below('run-1', 12); // { seq: 10, hash }
 * ```
 */
export class TrustedPoints {
  readonly #streams = new Map<string, Map<number, string>>();

  constructor(readonly perStream = 64) {}

  add(stream: string, seq: number, hash: string): void {
    let points = this.#streams.get(stream);
    if (!points) {
      points = new Map();
      this.#streams.set(stream, points);
    }
    points.set(seq, hash);
    if (points.size > this.perStream) {
      const oldest = points.keys().next().value;
      if (oldest !== undefined) points.delete(oldest);
    }
  }

  get(stream: string, seq: number): string | undefined {
    return this.#streams.get(stream)?.get(seq);
  }

  /** The highest trusted point at or below `seq`. */
  below(stream: string, seq: number): { seq: number; hash: string } | undefined {
    let best: { seq: number; hash: string } | undefined;
    for (const [s, hash] of this.#streams.get(stream) ?? []) {
      if (s <= seq && (best === undefined || s > best.seq)) best = { seq: s, hash };
    }
    return best;
  }
}
