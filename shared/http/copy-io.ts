import { checkMeta } from '../commit/labels.js';
import type { JsonValue } from '../domain/canonical.js';
import { COPY_EVENT, type CopiedTuple, type CopyIo } from '../domain/copy-thread.js';
import { HefestoError, NotFoundError } from '../domain/errors.js';
import type { DeltaOp } from '../domain/state.js';
import { chunksOfValue } from '../domain/state-v2/chunks.js';
import type { Ledger } from '../ledger/ledger.js';
import type { MemoryAccount } from '../state/memory-pool.js';
import type { TupleAnswer } from '../state/tuple-read.js';
import { requestDigest } from './idempotency-key.js';

/** Pages of `lg.copy` events a copy reads at most (100 each): a real stream has one. */
const MAX_COPY_PAGES = 10;

/**
 * The copy procedure's transport over the services (shared/domain/copy-thread.ts), for
 * `POST /v1/streams/{id}/copy-thread`: each call does what the public route it stands for
 * does (GET …/tuple, POST …/checkpoints, …), in the key's tenant, read from the verified
 * chain. Each runs on a memory account of its own, so a call that copies many checkpoints is
 * charged for the one at hand, not all of them; the append carries the digest an HTTP append
 * of the same events would, so a copy the SDK started and the route finished (or the other
 * way round) appends its `lg.copy` once.
 */
export const copyIo = (ledger: Ledger, tenant: string): CopyIo => {
  const pool = ledger.states.memory;
  const scoped = <T>(work: (memory: MemoryAccount | undefined) => Promise<T>): Promise<T> =>
    pool ? pool.run(work) : work(undefined);
  const whole = (t: TupleAnswer & { checkpoint: NonNullable<TupleAnswer['checkpoint']> }) =>
    ({
      checkpoint: t.checkpoint,
      state: (t.state ?? {}) as Record<string, unknown>,
      writes: t.writes,
    }) as CopiedTuple;
  return {
    tuple: (stream, label) =>
      scoped(async (memory) => {
        const t = await ledger.tuples.read({ tenant, stream, label, memory });
        if (!t.checkpoint) throw new NotFoundError(`checkpoint ${label} not found in ${stream}`);
        return whole({ ...t, checkpoint: t.checkpoint });
      }),
    head: (stream) =>
      scoped(async (memory) => {
        try {
          const t = await ledger.tuples.read({ tenant, stream, memory });
          return t.checkpoint ? whole({ ...t, checkpoint: t.checkpoint }) : { checkpoint: null };
        } catch (err) {
          if (err instanceof HefestoError && err.code === 'ErrStreamNotFound') return undefined;
          throw err;
        }
      }),
    parentOf: async (stream, label) => {
      await ledger.reader.head(tenant, stream);
      return (await ledger.labels.get(tenant, stream, label)).parentLabel;
    },
    copies: async (stream) => {
      const out: unknown[] = [];
      let from: number | undefined = 1;
      for (let page = 0; from !== undefined && page < MAX_COPY_PAGES; page++) {
        const read = await ledger.reader.readEvents(tenant, stream, {
          from,
          type: COPY_EVENT,
          limit: 100,
        });
        out.push(...read.events.map((e) => e.payload));
        from = read.next;
      }
      return out;
    },
    checkpoint: (stream, body) =>
      scoped(async (memory) => {
        const b = body as {
          ops: DeltaOp[];
          baseDigest: string;
          label: string;
          meta?: JsonValue;
          parentLabel?: string;
          schema?: number;
        };
        const result = await ledger.checkpoints.checkpoint({
          tenant,
          stream,
          ops: b.ops,
          baseDigest: b.baseDigest,
          label: b.label,
          meta: b.meta === undefined ? undefined : checkMeta(b.meta),
          parentLabel: b.parentLabel,
          schema: b.schema,
          memory,
        });
        return { stateDigest: result.stateDigest };
      }),
    putWrites: async (stream, label, task) => {
      await ledger.pendingWrites.put(tenant, stream, label, task as never);
    },
    append: async (stream, events, key) => {
      const body = { events };
      await ledger.appender.append({
        tenant,
        stream,
        events: events as never,
        idempotency: { key, digest: requestDigest('POST', `/v1/streams/${stream}/events`, body) },
      });
    },
    putValue: async (value) => {
      // Children first (chunksOfValue), so no chunk is stored naming one that is not there.
      const { ref, chunks } = chunksOfValue(value as JsonValue);
      for (const chunk of chunks)
        await ledger.states.values.putChunk(tenant, chunk.hash, chunk.bytes);
      return ref;
    },
  };
};
