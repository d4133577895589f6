import { createHash } from 'node:crypto';

/**
 * (thread_id, checkpoint_ns) -> stream id: `{prefix}.{thread}.{ns}`, each part escaped on its
 * own, so every namespace of a thread shares the prefix `{prefix}.{thread}.` (what
 * deleteThread and list without a namespace query) and no thread's prefix is another's.
 * Letters, digits and `-` stay; any other character becomes `:` + its UTF-8 bytes in hex
 * (`|` -> `:7c`, `.` -> `:2e`). A part too long for the 128-character stream id is replaced
 * by `~` + 32 hex digits of its SHA-256 (same input, same id; `~` never appears otherwise).
 */

const PART_MAX = 56;

const escapePart = (part: string): string => {
  let out = '';
  for (const ch of part) {
    if (/^[A-Za-z0-9-]$/.test(ch)) out += ch;
    else out += `:${Buffer.from(ch, 'utf8').toString('hex')}`;
  }
  if (out.length <= PART_MAX) return out;
  return `h-${createHash('sha256').update(part, 'utf8').digest('hex').slice(0, 32)}`;
};

/** The prefix every stream of a thread starts with. */
export const threadPrefix = (prefix: string, threadId: string): string =>
  `${prefix}.${escapePart(threadId)}.`;

export const streamIdOf = (prefix: string, threadId: string, ns: string): string =>
  `${threadPrefix(prefix, threadId)}${escapePart(ns)}`;

/**
 * The stream of a thread's resume requests (resume-requests.ts): its own stream, so they are
 * recorded while a worker holds the thread's exclusive lease (a write to the thread's stream
 * without the lease's epoch is ErrFenced). `{thread stream}.resume`: under the thread's prefix
 * (deleteThread takes it too) and never a (thread, namespace) stream (an escaped part holds no
 * `.`), so list and the console see no checkpoints there.
 */
export const resumeStreamOf = (threadStream: string): string => {
  const id = `${threadStream}.resume`;
  if (id.length > 128)
    throw new Error(`thread stream ${threadStream} is too long for resume requests`);
  return id;
};

const LABEL = /^[A-Za-z0-9._:-]{1,128}$/;

/** A checkpoint id as a Hefesto label: as it is when it fits, else `x.` + hex of it. */
export const labelOf = (checkpointId: string): string => {
  if (LABEL.test(checkpointId) && !checkpointId.startsWith('x.')) return checkpointId;
  const hex = Buffer.from(checkpointId, 'utf8').toString('hex');
  if (hex.length > 126) throw new Error('checkpoint ids longer than 63 bytes are not supported');
  return `x.${hex}`;
};

export const checkpointIdOf = (label: string): string =>
  label.startsWith('x.') ? Buffer.from(label.slice(2), 'hex').toString('utf8') : label;
