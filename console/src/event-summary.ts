/**
 * The one-line human summary of an event in the timeline, by its type:
 *
 *   hefesto.delta       its first op (past the LangGraph saver's bookkeeping) and how many
 *                       follow, `set /messages/- "hi…" (+2 ops)`, its step and label
 *   hefesto.migration   `schema 1 → 2:` and its ops as a delta's
 *   hefesto.fork        where it came from: `fork of run-a at seq 4`
 *   hefesto.writes      the label whose pending writes it binds
 *   hefesto.effect.*    `pay-1 (pay) completed → {"paid":5}`, or failed with its error
 *   hefesto.history.*   an OpenAI Agents session's change (appended items, a pop, a clear)
 *   lease / drain       any other event whose payload names an owner and an epoch
 *   anything else       its JSON
 *
 * Cut to `max` characters. No DOM: the unit tests import it. Bidi controls are made visible
 * where the text is put into the page (dom.ts), not here.
 */

const cut = (text: string, max: number): string =>
  text.length > max ? `${text.slice(0, max - 1)}…` : text;

const json = (value: unknown): string => JSON.stringify(value) ?? 'undefined';

const record = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

/** A path as shown: `(root)` for the empty pointer. */
const pathText = (path: unknown): string =>
  typeof path === 'string' && path !== '' ? path : '(root)';

/** One op: `set /a "hi…"` (its value cut to 24 characters), `delete /x`. */
export const opSummary = (op: unknown): string => {
  const { op: kind, path, value, ref } = record(op);
  const head = `${String(kind)} ${pathText(path)}`;
  if (kind !== 'set') return head;
  if (ref !== undefined) return `${head} (by ref)`;
  return `${head} ${cut(json(value), 24)}`;
};

/**
 * The LangGraph saver's bookkeeping (its checkpoint record, thread and namespace, held refs):
 * an op there is not the one shown first when the delta has another.
 */
const BOOKKEEPING = /^\/(ckpt|thread|ns|_held)(\/|$)/;

const opsSummary = (ops: unknown): string => {
  if (!Array.isArray(ops) || ops.length === 0) return 'no ops';
  const lead =
    ops.find((o) => !BOOKKEEPING.test(String(record(o).path ?? ''))) ?? (ops[0] as unknown);
  const more = ops.length - 1;
  return `${opSummary(lead)}${more > 0 ? ` (+${more} op${more === 1 ? '' : 's'})` : ''}`;
};

const deltaSummary = (payload: Record<string, unknown>): string => {
  const label = typeof payload.label === 'string' ? ` · label ${payload.label}` : '';
  const step = record(payload.meta).step;
  return `${opsSummary(payload.ops)}${typeof step === 'number' ? ` · step ${step}` : ''}${label}`;
};

const historySummary = (payload: Record<string, unknown>): string => {
  const change = record(payload.change ?? payload);
  const items = Array.isArray(change.items) ? change.items.length : undefined;
  switch (change.type) {
    case 'append_items':
      return `appended ${items ?? 0} item${items === 1 ? '' : 's'}`;
    case 'replace_history':
      return `history replaced by ${items ?? 0} item${items === 1 ? '' : 's'} (compaction)`;
    case 'pop':
      return 'popped the last item';
    case 'clear':
      return 'cleared the session';
    case 'replace_suffix':
      return 'replaced the history’s suffix';
    default:
      return json(payload);
  }
};

export const eventSummary = (type: string, payload: unknown, max = 120): string => {
  const p = record(payload);
  let text: string;
  if (type === 'hefesto.delta' && Array.isArray(p.ops)) text = deltaSummary(p);
  else if (type === 'hefesto.migration' && Array.isArray(p.ops))
    text = `schema ${String(p.from)} → ${String(p.to)}: ${deltaSummary(p)}`;
  else if (type === 'hefesto.fork' && p.source) {
    const s = record(p.source);
    text = `fork of ${String(s.streamId)} at seq ${String(s.seq)}`;
  } else if (type === 'hefesto.writes')
    text = `pending writes of ${String(p.label ?? record(p.pendingWrites).label ?? '?')} bound`;
  else if (type === 'hefesto.effect.completed' || type === 'hefesto.effect.failed') {
    const ok = type === 'hefesto.effect.completed';
    const outcome = ok ? `completed → ${json(p.result)}` : `failed: ${json(p.error)}`;
    const saga = typeof p.sagaId === 'string' ? ` · saga ${p.sagaId}` : '';
    text = `${String(p.effectKey)} (${String(p.kind)}) ${outcome}${saga}`;
  } else if (type.startsWith('hefesto.history')) text = historySummary(p);
  else if (typeof p.owner === 'string' && typeof p.epoch === 'number')
    text = `${/drain/i.test(type) ? 'drain' : 'lease'} ${p.owner} · epoch ${p.epoch}${p.draining ? ' · draining' : ''}`;
  else text = json(payload);
  return cut(text, max);
};
