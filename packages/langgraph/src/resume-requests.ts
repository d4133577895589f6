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
 *
 * Polling is bounded: the saver remembers how far it read each resume stream (and the hash of
 * the last event read) with the newest request per checkpoint seen, so a poll reads only the
 * events recorded since, plus the last one read again: when that one is not there with the
 * same hash (the thread was deleted and its resume stream begun anew), it reads from the
 * start once more.
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
    (await newestRecorded(saver, resumeStreamOf(stream), label)) ??
    (await newestFor(saver, stream, head.seq + 1, label))
  );
};

/** How far a saver read a resume stream, and the newest request per checkpoint seen there. */
interface ResumeCursor {
  /** The seq and hash of the last event read. */
  seq: number;
  hash: string;
  newest: Map<string, ResumeRequest>;
}

/** Checkpoints whose newest request a cursor keeps (older ones are no thread's head again). */
const MAX_REMEMBERED_LABELS = 64;
const cursors = new WeakMap<HefestoSaver, Map<string, ResumeCursor>>();

const notFound = (err: unknown) => {
  const code = (err as { code?: unknown }).code;
  return code === 'ErrNotFound' || code === 'ErrStreamNotFound';
};

/** The newest `lg.resume` for checkpoint `label` on resume stream `stream` (see above). */
const newestRecorded = async (
  saver: HefestoSaver,
  stream: string,
  label: string,
): Promise<ResumeRequest | undefined> => {
  const mine = cursors.get(saver) ?? new Map<string, ResumeCursor>();
  cursors.set(saver, mine);
  let cursor = mine.get(stream);
  let from: number | null = cursor ? cursor.seq : 1;
  for (let first = true; from !== null; first = false) {
    let page: Awaited<ReturnType<typeof saver.client.readEvents>>;
    try {
      page = await saver.client.readEvents(stream, { from, limit: 100 });
    } catch (err) {
      if (!notFound(err)) throw err;
      mine.delete(stream);
      return undefined;
    }
    let events = page.events;
    if (first && cursor) {
      const again = events[0];
      if (again?.seq !== cursor.seq || again.hash !== cursor.hash) {
        // Not the stream the cursor read: begin again.
        mine.delete(stream);
        cursor = undefined;
        from = 1;
        continue;
      }
      events = events.slice(1);
    }
    cursor ??= { seq: 0, hash: '', newest: new Map() };
    for (const e of events) {
      cursor.seq = e.seq;
      cursor.hash = e.hash;
      if (e.type !== RESUME_EVENT) continue;
      const p = (e.payload ?? {}) as { checkpointId?: unknown; value?: unknown };
      if (typeof p.checkpointId !== 'string') continue;
      const at = labelOf(p.checkpointId);
      cursor.newest.delete(at);
      cursor.newest.set(at, { checkpointId: checkpointIdOf(at), value: p.value, seq: e.seq });
      if (cursor.newest.size > MAX_REMEMBERED_LABELS)
        cursor.newest.delete(cursor.newest.keys().next().value as string);
    }
    if (cursor.seq > 0) mine.set(stream, cursor);
    from = page.next;
  }
  return cursor?.newest.get(label);
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
