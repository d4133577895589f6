import { COPY_EVENT, type CopyIo, copyThreadVia, type Json } from '@hefesto/client';
import type { HefestoSaver } from './hefesto-saver.js';
import { labelOf } from './stream-ids.js';

/**
 * Time travel into a new thread: `copyThread(saver, { threadId, checkpointId, newThreadId })`
 * copies the checkpoints from the thread's first to `checkpointId` (default: its newest)
 * into `newThreadId`, with their labels (checkpoint ids), metadata, parent links, pending
 * writes and held values, and the thread id rewritten in each state, so `saver.getTuple`
 * of the new thread answers the checkpoint copied and a graph invoked on it resumes from
 * there (an interrupt pending there is pending in the copy too). The source is untouched;
 * an existing `newThreadId` with a history of its own is refused before anything is written
 * to it, and a copy that stopped midway (a crash, a lost reply) is finished by calling again
 * with the same options. Memory and request sizes are bounded (large changes go by ref). The
 * procedure is shared/domain/copy-thread.ts, run here over the client's requests: the same
 * one `POST /v1/streams/{id}/copy-thread` (which the console's "Fork this run" calls) runs
 * over the server's services.
 */
export interface CopyThreadOptions {
  threadId: string;
  /** Default: the thread's newest checkpoint. */
  checkpointId?: string;
  newThreadId: string;
  /** The namespace copied. Default `''` (the root graph). */
  ns?: string;
}

export const copyThread = async (
  saver: HefestoSaver,
  options: CopyThreadOptions,
): Promise<{ checkpoints: number; streamId: string }> => {
  const { client } = saver;
  const ns = options.ns ?? '';
  const from = saver.streamIdOf(options.threadId, ns);
  const to = saver.streamIdOf(options.newThreadId, ns);
  const label =
    options.checkpointId === undefined
      ? (await client.getCheckpointTuple(from)).checkpoint?.label
      : labelOf(options.checkpointId);
  if (label === undefined) throw new Error(`thread ${options.threadId} has no checkpoint`);
  const notFound = (err: unknown) => {
    const code = (err as { code?: unknown }).code;
    return code === 'ErrNotFound' || code === 'ErrStreamNotFound';
  };
  const io: CopyIo = {
    tuple: async (stream, l) => {
      const t = await client.getCheckpointTuple(stream, { label: l });
      if (!t.checkpoint) throw new Error(`checkpoint ${l} not found in ${stream}`);
      return { checkpoint: t.checkpoint, state: t.state, writes: t.writes };
    },
    head: async (stream) => {
      try {
        const t = await client.getCheckpointTuple(stream);
        return t.checkpoint
          ? { checkpoint: t.checkpoint, state: t.state, writes: t.writes }
          : { checkpoint: null };
      } catch (err) {
        if (notFound(err)) return undefined;
        throw err;
      }
    },
    parentOf: async (stream, l) => (await client.getCheckpoint(stream, l)).parentLabel,
    copies: async (stream) => {
      const out: unknown[] = [];
      for (let from: number | null = 1; from !== null; ) {
        const page = await client.readEvents(stream, { from, type: COPY_EVENT, limit: 100 });
        out.push(...page.events.map((e) => e.payload));
        from = page.next;
      }
      return out;
    },
    checkpoint: (stream, body) =>
      client.checkpoint(stream, body as never, { idempotencyKey: null }),
    putWrites: async (stream, l, task) => {
      await client.putPendingWrites(stream, l, task as never);
    },
    append: async (stream, events, idempotencyKey) => {
      await client.append(
        stream,
        events.map((e) => ({ type: e.type, payload: e.payload as Json })),
        { idempotencyKey },
      );
    },
    putValue: (value) => client.putValue(value as Json),
  };
  const { checkpoints } = await copyThreadVia(io, {
    from: { streamId: from, label },
    to: { streamId: to, threadId: options.newThreadId },
  });
  return { checkpoints, streamId: to };
};

export { COPY_EVENT };
