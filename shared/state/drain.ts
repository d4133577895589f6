import type { Reader } from '../chain/reader.js';
import type { LeaseService } from '../leases/leases.js';
import type { Clock } from '../ports/clock.js';
import { type StateStore, snapshotState } from './state.js';

/**
 * Hot migration, old worker's side (the steps and their crash windows are in leases.ts):
 * mark draining, wait for in-flight writes to settle, write a terminal base snapshot, release.
 */

export interface DrainOptions {
  leases: LeaseService;
  reader: Reader;
  states: StateStore;
  clock: Clock;
  /** Poll interval while waiting for quiet. Default 50 ms. */
  pollMs?: number;
  /** The stream counts as quiet after this long without a new event. Default 300 ms. */
  quietMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

export interface DrainResult {
  epoch: number;
  seq: number;
  stateDigest: string;
  snapshot: boolean;
}

export class Drainer {
  readonly #o: Required<DrainOptions>;

  constructor(options: DrainOptions) {
    this.#o = {
      ...options,
      pollMs: options.pollMs ?? 50,
      quietMs: options.quietMs ?? 300,
      sleep: options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
    };
  }

  async drain(
    tenant: string,
    stream: string,
    owner: string,
    epoch: number,
    graceMs = 10_000,
  ): Promise<DrainResult> {
    const { leases, reader, states, pollMs, quietMs, sleep } = this.#o;
    await leases.markDraining(tenant, stream, owner, epoch);
    // Counted in polls rather than clock readings, so the wait is the same under any clock.
    const maxPolls = Math.ceil(graceMs / pollMs);
    const quietPolls = Math.ceil(quietMs / pollMs);
    let head = await reader.head(tenant, stream).catch(() => undefined);
    for (let polls = 0, quiet = 0; polls < maxPolls && quiet < quietPolls; polls++) {
      await sleep(pollMs);
      const now = await reader.head(tenant, stream).catch(() => undefined);
      quiet = now?.seq === head?.seq ? quiet + 1 : 0;
      head = now;
    }
    let snapshot = false;
    if (head && head.seq > 0) {
      const at = await states.hydrate(tenant, stream, head.seq);
      await states.writeSnapshot(tenant, stream, {
        seq: at.seq,
        hash: at.hash,
        stateDigest: at.stateDigest,
        ...snapshotState(at.working),
        digestVersion: at.working.version,
        ...(at.stateSeq === undefined ? {} : { stateSeq: at.stateSeq }),
      });
      snapshot = true;
    }
    await leases.release(tenant, stream, owner, epoch);
    return { epoch, seq: head?.seq ?? 0, stateDigest: head?.stateDigest ?? '', snapshot };
  }
}
