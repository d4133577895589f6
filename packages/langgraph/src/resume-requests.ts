import type { Json } from '@hefesto/client';
import type { HefestoSaver } from './hefesto-saver.js';
import { checkpointIdOf, labelOf } from './stream-ids.js';

/**
 * Resume values for an interrupted thread, recorded by someone who cannot run the graph (the
 * console's "Resume with…") for the worker that can: an event `lg.resume`
 * `{checkpointId, value}` on the thread's stream. `pendingResume` answers the newest one
 * recorded for the thread's newest checkpoint after it was written, so a worker polls it
 * and invokes `graph.invoke(new Command({ resume: r.value }), config)`; once that run writes
 * a checkpoint, the request is no longer pending.
 */

export const RESUME_EVENT = 'lg.resume';

export interface ResumeRequest {
  checkpointId: string;
  value: unknown;
  /** The seq of its event. */
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
  const res = await saver.client.append(saver.streamIdOf(threadId, ns), [
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
  let found: ResumeRequest | undefined;
  let from: number | null = head.seq + 1;
  while (from !== null) {
    const page = await saver.client.readEvents(stream, { from, type: RESUME_EVENT, limit: 100 });
    for (const e of page.events) {
      const p = (e.payload ?? {}) as { checkpointId?: unknown; value?: unknown };
      if (typeof p.checkpointId === 'string' && labelOf(p.checkpointId) === label)
        found = { checkpointId: checkpointIdOf(label), value: p.value, seq: e.seq };
    }
    from = page.next;
  }
  return found;
};
