import {
  ConflictError,
  DrainingError,
  FencedError,
  InvalidInputError,
  LeaseHeldError,
} from '../domain/errors.js';
import type { Clock } from '../ports/clock.js';
import type { Item, ItemKey, RecordStore, TransactOp } from '../ports/record-store.js';
import { streamPk } from './layout.js';

/**
 * Worker leases with fencing, for hot migration of a stream between workers.
 *
 * One record per stream (sk `writer-lease`): {owner, epoch, active, draining, expiresAt}.
 * Acquiring a free (or expired, or released) lease takes epoch + 1. Every write may carry
 * the epoch as its fencing token; the append commit then includes a `check` of this record
 * (epoch equal, lease active, and for checkpoints not draining) in the SAME transaction that
 * moves the head, so a stale worker's write can never land after a newer worker took over.
 *
 * Hot migration (drain):
 *   1. mark the lease draining (checkpoints refused: no new turns; other writes of the
 *      in-flight turn still land);
 *   2. wait until the stream has been quiet for `quietMs`, at most `graceMs` (5-15 s);
 *   3. write a terminal base snapshot of the head state;
 *   4. release (active = false): the old epoch is fenced from here on.
 * Dies after 1: the lease stays draining until it expires; the next acquire takes over.
 * Dies after 3: same; the snapshot only makes the next hydration cheaper.
 */

export interface LeaseRecord {
  owner: string;
  epoch: number;
  active: boolean;
  draining: boolean;
  expiresAt: number;
}

export const leaseKey = (tenant: string, stream: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: 'writer-lease',
});

const toLease = (item: Item): LeaseRecord => ({
  owner: String(item.owner),
  epoch: Number(item.epoch),
  active: item.active === true,
  draining: item.draining === true,
  expiresAt: Number(item.expiresAt),
});

/** What a fenced write must satisfy, as a transaction check. */
export const fenceCheck = (
  tenant: string,
  stream: string,
  epoch: number,
  checkpoint: boolean,
): TransactOp => ({
  kind: 'check',
  key: leaseKey(tenant, stream),
  conditions: [
    { op: 'eq', attr: 'epoch', value: epoch },
    { op: 'eq', attr: 'active', value: true },
    ...(checkpoint ? [{ op: 'eq' as const, attr: 'draining', value: false }] : []),
  ],
});

/** Whether a write under `fence` would fail the fence check against this lease record. */
export const isFenced = (
  current: Item | undefined,
  fence: { epoch: number; checkpoint: boolean },
): boolean => {
  const lease = current ? toLease(current) : undefined;
  return (
    !lease || lease.epoch !== fence.epoch || !lease.active || (fence.checkpoint && lease.draining)
  );
};

/** The domain error for a failed fence check, from what the lease record holds now. */
export const fenceError = (epoch: number, current: Item | undefined): Error => {
  const lease = current ? toLease(current) : undefined;
  if (lease && lease.epoch === epoch && lease.active && lease.draining) return new DrainingError();
  return new FencedError(epoch, lease?.epoch, lease?.active);
};

export interface LeaseServiceOptions {
  records: RecordStore;
  clock: Clock;
  /** Longest lease a worker may ask for. Default 5 min. */
  maxTtlMs?: number;
}

export class LeaseService {
  readonly #records: RecordStore;
  readonly #clock: Clock;
  readonly #maxTtlMs: number;

  constructor(options: LeaseServiceOptions) {
    this.#records = options.records;
    this.#clock = options.clock;
    this.#maxTtlMs = options.maxTtlMs ?? 300_000;
  }

  async get(tenant: string, stream: string): Promise<LeaseRecord | undefined> {
    const item = await this.#records.get(leaseKey(tenant, stream));
    return item ? toLease(item) : undefined;
  }

  #ttl(ttlMs: number): number {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1000 || ttlMs > this.#maxTtlMs) {
      throw new InvalidInputError(`ttlMs must be between 1000 and ${this.#maxTtlMs}`);
    }
    return ttlMs;
  }

  /** Takes the lease (epoch + 1), or extends it when `owner` already holds it. */
  async acquire(
    tenant: string,
    stream: string,
    owner: string,
    ttlMs: number,
  ): Promise<LeaseRecord> {
    const ttl = this.#ttl(ttlMs);
    for (let attempt = 0; attempt < 5; attempt++) {
      const now = this.#clock.now();
      const current = await this.get(tenant, stream);
      const held = current?.active === true && current.expiresAt > now;
      if (held && current.owner !== owner) throw new LeaseHeldError(current.expiresAt);
      const next: LeaseRecord = {
        owner,
        epoch: held ? (current?.epoch ?? 0) : (current?.epoch ?? 0) + 1,
        active: true,
        draining: held ? (current?.draining ?? false) : false,
        expiresAt: now + ttl,
      };
      try {
        await this.#records.put(
          { ...leaseKey(tenant, stream), ...next },
          {
            conditions: current
              ? [
                  { op: 'eq', attr: 'epoch', value: current.epoch },
                  { op: 'eq', attr: 'expiresAt', value: current.expiresAt },
                ]
              : [{ op: 'notExists' }],
          },
        );
        return next;
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
    const now = await this.get(tenant, stream);
    throw new LeaseHeldError(now?.expiresAt ?? this.#clock.now());
  }

  /** Extends a held lease; a stale epoch or another owner is ErrFenced. */
  async renew(
    tenant: string,
    stream: string,
    owner: string,
    epoch: number,
    ttlMs: number,
  ): Promise<LeaseRecord> {
    const ttl = this.#ttl(ttlMs);
    return this.#updateMine(tenant, stream, owner, epoch, { expiresAt: this.#clock.now() + ttl });
  }

  /** Releases a held lease: from here on the epoch is fenced. */
  async release(tenant: string, stream: string, owner: string, epoch: number): Promise<void> {
    await this.#updateMine(tenant, stream, owner, epoch, { active: false, draining: false });
  }

  /** Step 1 of a drain: refuse new turns from now on. */
  async markDraining(tenant: string, stream: string, owner: string, epoch: number): Promise<void> {
    await this.#updateMine(tenant, stream, owner, epoch, { draining: true });
  }

  /** Updates the lease only while `owner` holds it at `epoch`; otherwise ErrFenced. */
  async #updateMine(
    tenant: string,
    stream: string,
    owner: string,
    epoch: number,
    set: Record<string, number | boolean>,
  ): Promise<LeaseRecord> {
    try {
      const item = await this.#records.update(
        leaseKey(tenant, stream),
        { set },
        {
          conditions: this.#mine(owner, epoch),
        },
      );
      return toLease(item);
    } catch (err) {
      if (err instanceof ConflictError) throw fenceError(epoch, err.current as Item | undefined);
      throw err;
    }
  }

  #mine(owner: string, epoch: number) {
    return [
      { op: 'eq' as const, attr: 'owner', value: owner },
      { op: 'eq' as const, attr: 'epoch', value: epoch },
      { op: 'eq' as const, attr: 'active', value: true },
    ];
  }
}
