import type { HefestoClient } from './client.js';

/**
 * The lease a durable run holds (`resume(…, { lease })`): renewed in the background every
 * ttlMs / 3 (at least 250 ms); a renewal that fails marks it lost, and every write of the run
 * then throws that failure (ErrFenced once another worker took the stream over).
 *
 * @example
 * ```ts
 * const lease = new RunLease(client, 'run-1', { owner: 'worker-a', epoch: 3, ttlMs: 30_000 });
 * lease.check();
 * await lease.stop(true);
 * ```
 */
export class RunLease {
  readonly owner: string;
  readonly epoch: number;
  readonly #timer: ReturnType<typeof setInterval>;
  #lost: unknown;

  constructor(
    readonly client: HefestoClient,
    readonly streamId: string,
    lease: { owner: string; epoch: number; ttlMs: number },
  ) {
    const { owner, epoch, ttlMs } = lease;
    this.owner = owner;
    this.epoch = epoch;
    const timer = setInterval(
      () => {
        client.renewLease(streamId, { owner, epoch, ttlMs }).catch((err: unknown) => {
          this.#lost = err;
          clearInterval(timer);
        });
      },
      Math.max(250, Math.floor(ttlMs / 3)),
    );
    timer.unref?.();
    this.#timer = timer;
  }

  /** Throws the failure that lost the lease, if it was lost. */
  check(): void {
    if (this.#lost !== undefined) throw this.#lost;
  }

  /** Stops renewing; with `release`, gives the lease up (its epoch is fenced from then on). */
  async stop(release: boolean): Promise<void> {
    clearInterval(this.#timer);
    if (release)
      await this.client.releaseLease(this.streamId, { owner: this.owner, epoch: this.epoch });
    this.client.setFence(this.streamId, undefined);
  }
}
