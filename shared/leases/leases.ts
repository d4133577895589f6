import { liveHeadCheck } from '../chain/chain-head.js';
import { writerLeaseKey } from '../chain/storage-keys.js';
import {
  ConflictError,
  DrainingError,
  FencedError,
  InvalidInputError,
  LeaseHeldError,
  StreamNotFoundError,
} from '../domain/errors.js';
import { optimistic } from '../domain/optimistic.js';
import type { Clock } from '../ports/clock.js';
import type { Item, RecordStore, TransactOp } from '../ports/record-store.js';

/**
 * Worker leases with fencing, for hot migration of a stream between workers.
 *
 * One record per stream (sk `writer-lease`): {owner, epoch, active, draining, expiresAt,
 * exclusive}. Every acquisition takes epoch + 1, by a new owner or by the same owner again
 * (a restarted worker must not share its dead predecessor's token); renew extends a held
 * lease at its epoch. Every write may carry the epoch as its fencing token; the append commit
 * then includes a `check` of this record (epoch equal, lease active, and for checkpoints not
 * draining) in the SAME transaction that moves the head, so a stale worker's write can never
 * land after a newer worker took over.
 *
 * A stream being deleted refuses acquisition (ErrStreamNotFound): the lease put carries a check
 * of the head in its transaction; the delete itself removes the lease (stream-delete.ts).
 *
 * Exclusive (the default): while the lease is held (active and not expired), a write WITHOUT
 * a token is refused too, by a check in the same transaction (no exclusive lease held now),
 * so a worker that skips the lease cannot fork the run. A lease taken with exclusive: false
 * only fences writers that carry a token. Records written before exclusivity existed carry no
 * `exclusive` and count as non-exclusive (their holders took them under those terms).
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
  /** Writes without the epoch are refused while it is held. */
  exclusive: boolean;
}

const toLease = (item: Item): LeaseRecord => ({
  owner: String(item.owner),
  epoch: Number(item.epoch),
  active: item.active === true,
  draining: item.draining === true,
  expiresAt: Number(item.expiresAt),
  exclusive: item.exclusive === true,
});

/** A writer's fencing token; none for a write that carries no Hefesto-Fencing-Token. */
export type Fence = { epoch: number; checkpoint: boolean } | undefined;

const heldExclusively = (lease: LeaseRecord | undefined, now: number): lease is LeaseRecord =>
  lease?.exclusive === true && lease.active && lease.expiresAt > now;

/** What a fenced write must satisfy, as a transaction check. */
export const fenceCheck = (
  tenant: string,
  stream: string,
  epoch: number,
  checkpoint: boolean,
): TransactOp => ({
  kind: 'check',
  key: writerLeaseKey(tenant, stream),
  conditions: [
    { op: 'eq', attr: 'epoch', value: epoch },
    { op: 'eq', attr: 'active', value: true },
    ...(checkpoint ? [{ op: 'eq' as const, attr: 'draining', value: false }] : []),
  ],
});

/**
 * The lease check of a write's commit: its fence, or, without one, that no exclusive lease is
 * held at `now` (the negation of heldExclusively; a missing record has no `exclusive`).
 */
export const leaseGuard = (
  tenant: string,
  stream: string,
  fence: Fence,
  now: number,
): TransactOp =>
  fence
    ? fenceCheck(tenant, stream, fence.epoch, fence.checkpoint)
    : {
        kind: 'check',
        key: writerLeaseKey(tenant, stream),
        conditions: [
          {
            op: 'any',
            conditions: [
              { op: 'attrNotExists', attr: 'exclusive' },
              { op: 'eq', attr: 'exclusive', value: false },
              { op: 'eq', attr: 'active', value: false },
              { op: 'lte', attr: 'expiresAt', value: now },
            ],
          },
        ],
      };

/** Whether a write under `fence` would fail its lease guard against this lease record. */
export const isFenced = (current: Item | undefined, fence: Fence, now: number): boolean => {
  const lease = current ? toLease(current) : undefined;
  if (!fence) return heldExclusively(lease, now);
  return (
    !lease || lease.epoch !== fence.epoch || !lease.active || (fence.checkpoint && lease.draining)
  );
};

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The domain error for a write (or lease call) the lease refused, from what the lease record
 * holds now: says which of the cases it is, so a worker knows whether it was replaced, is
 * early, or simply forgot its token.
 */
export const fenceError = (
  current: Item | undefined,
  by: { epoch?: number; owner?: string },
  now: number,
): Error => {
  const lease = current ? toLease(current) : undefined;
  const { epoch, owner } = by;
  if (epoch === undefined) {
    if (!heldExclusively(lease, now)) return new FencedError('the stream lease changed; retry');
    return new FencedError(
      `worker ${lease.owner} holds this stream's lease exclusively (epoch ${lease.epoch}, until ` +
        `${iso(lease.expiresAt)}): writes must carry its epoch as Hefesto-Fencing-Token`,
      lease.epoch,
    );
  }
  if (!lease) return new FencedError(`fencing token ${epoch} names no lease of this stream`);
  const at = lease.epoch;
  if (epoch > at) {
    return new FencedError(
      `fencing token ${epoch} is from the future: the stream's lease is at epoch ${at}`,
      at,
    );
  }
  if (epoch < at) {
    const holds = lease.active && lease.expiresAt > now ? 'holds it' : 'held it';
    return new FencedError(
      `fencing token ${epoch} is stale: the lease was acquired again at epoch ${at} ` +
        `(${lease.owner} ${holds})`,
      at,
    );
  }
  if (!lease.active) return new FencedError(`the lease of epoch ${epoch} was released`, at);
  if (owner !== undefined && owner !== lease.owner) {
    return new FencedError(`the lease of epoch ${epoch} is held by ${lease.owner}`, at);
  }
  if (lease.draining) return new DrainingError();
  return new FencedError(`the lease of epoch ${epoch} changed; retry`, at);
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
    const item = await this.#records.get(writerLeaseKey(tenant, stream));
    return item ? toLease(item) : undefined;
  }

  #ttl(ttlMs: number): number {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1000 || ttlMs > this.#maxTtlMs) {
      throw new InvalidInputError(`ttlMs must be between 1000 and ${this.#maxTtlMs}`);
    }
    return ttlMs;
  }

  /**
   * Takes the lease with epoch + 1: when it is free (never taken, released or expired), or
   * held by this same owner (a restarted worker takes over from its predecessor, whose token
   * is fenced from then on). Another owner's live lease is ErrLeaseHeld. Use renew to extend.
   */
  async acquire(
    tenant: string,
    stream: string,
    owner: string,
    ttlMs: number,
    options: { exclusive?: boolean } = {},
  ): Promise<LeaseRecord> {
    const ttl = this.#ttl(ttlMs);
    return optimistic(
      async () => {
        const now = this.#clock.now();
        const current = await this.get(tenant, stream);
        const held = current?.active === true && current.expiresAt > now;
        if (held && current.owner !== owner) throw new LeaseHeldError(current.expiresAt);
        const next: LeaseRecord = {
          owner,
          epoch: (current?.epoch ?? 0) + 1,
          active: true,
          draining: false,
          expiresAt: now + ttl,
          exclusive: options.exclusive ?? true,
        };
        try {
          await this.#records.transact([
            {
              kind: 'put',
              item: { ...writerLeaseKey(tenant, stream), ...next },
              conditions: current
                ? [
                    { op: 'eq', attr: 'epoch', value: current.epoch },
                    { op: 'eq', attr: 'expiresAt', value: current.expiresAt },
                  ]
                : [{ op: 'notExists' }],
            },
            liveHeadCheck(tenant, stream),
          ]);
          return next;
        } catch (err) {
          // The transaction's second item: the stream's head is gone (or being deleted).
          if (err instanceof ConflictError && err.index === 1)
            throw new StreamNotFoundError(stream);
          throw err;
        }
      },
      {
        attempts: 5,
        exhausted: async () => {
          const now = await this.get(tenant, stream);
          throw new LeaseHeldError(now?.expiresAt ?? this.#clock.now());
        },
      },
    );
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
        writerLeaseKey(tenant, stream),
        { set },
        {
          conditions: this.#mine(owner, epoch),
        },
      );
      return toLease(item);
    } catch (err) {
      if (err instanceof ConflictError) {
        throw fenceError(err.current as Item | undefined, { epoch, owner }, this.#clock.now());
      }
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
