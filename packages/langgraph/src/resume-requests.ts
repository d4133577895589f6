import type { Json } from '@hefesto/client';
import type { HefestoSaver } from './hefesto-saver.js';
import { checkpointIdOf, labelOf, resumeStreamOf } from './stream-ids.js';

/**
 * Resume values for an interrupted thread, recorded by someone who cannot run the graph (the
 * console's "Resume with…") for the worker that can: an event `lg.resume`
 * `{checkpointId, value}` on the thread's resume stream (`{thread stream}.resume`,
 * stream-ids.ts: not the thread's own, which a worker's exclusive lease fences). A
 * `pendingResume` answers the newest one recorded for the thread's newest checkpoint, so a
 * worker polls it and invokes `graph.invoke(new Command({ resume: r.value }), config)`; once
 * that run writes a checkpoint (a new id: ids are never reused), it is no longer pending.
 * A request recorded by an earlier release, on the thread's own stream after its newest
 * checkpoint, is still found there (one more read, when the resume stream has none).
 */

export const RESUME_EVENT = 'lg.resume';

export interface ResumeRequest {
  checkpointId: string;
  value: unknown;
  /** The seq of its event on the resume stream. */
  seq: number;
}

/** Records `value` as the resume of the thread's newest checkpoint (`checkpointId`). */
export const requestResume = async (
  saver: HefestoSaver,
  threadId: string,
  checkpointId: string,
  value: Json,
  ns = '',
): Promise<{ seq: number }> => {
  const res = await saver.client.append(resumeStreamOf(saver.streamIdOf(threadId, ns)), [
    { type: RESUME_EVENT, payload: { checkpointId, value } },
  ]);
  return { seq: res.firstSeq };
};

/** The resume recorded for the thread's newest checkpoint, if any (see above). */
export const pendingResume = async (
  saver: HefestoSaver,
  threadId: string,
  ns = '',
): Promise<ResumeRequest | undefined> => {
  const stream = saver.streamIdOf(threadId, ns);
  const head = await saver.client.getCheckpointTuple(stream);
  if (!head.checkpoint) return undefined;
  const label = head.checkpoint.label;
  return (
    (await newestFor(saver, resumeStreamOf(stream), 1, label)) ??
    (await newestFor(saver, stream, head.seq + 1, label))
  );
};

/** The newest `lg.resume` for checkpoint `label` on `stream` from seq `from` on. */
const newestFor = async (
  saver: HefestoSaver,
  stream: string,
  start: number,
  label: string,
): Promise<ResumeRequest | undefined> => {
  let found: ResumeRequest | undefined;
  let from: number | null = start;
  while (from !== null) {
    let page: Awaited<ReturnType<typeof saver.client.readEvents>>;
    try {
      page = await saver.client.readEvents(stream, { from, type: RESUME_EVENT, limit: 100 });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === 'ErrNotFound' || code === 'ErrStreamNotFound') return undefined;
      throw err;
    }
    for (const e of page.events) {
      const p = (e.payload ?? {}) as { checkpointId?: unknown; value?: unknown };
      if (typeof p.checkpointId === 'string' && labelOf(p.checkpointId) === label)
        found = { checkpointId: checkpointIdOf(label), value: p.value, seq: e.seq };
    }
    from = page.next;
  }
  return found;
};
