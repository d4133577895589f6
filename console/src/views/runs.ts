import { mapLimit } from '../../../shared/domain/map-limit.js';
import {
  type Api,
  ApiError,
  eventsFrom,
  type LedgerEvent,
  type StreamRow,
  stream,
} from '../api.js';
import { h, time } from '../dom.js';
import {
  checkpointIdOf,
  isSessionState,
  parseThreadStream,
  RESUME_EVENT,
  type RunStatus,
  resumeStreamOf,
  sessionStatus,
  statusOf,
  stepsOf,
  type Tuple,
} from '../runs.js';
import { describeError } from './context.js';

/**
 * The tenant's agent runs: LangGraph threads (streams named as HefestoSaver names them,
 * `lg.<thread>.<ns>`) and OpenAI Agents sessions (streams whose first delta makes the
 * session's `{items, life}`), each with its id, namespace, last step, status and updated
 * time. A page of streams at a time; one read per run on it (its head tuple, or its last
 * items), so a long list costs what it shows.
 */

const PAGE = 100;
/** Streams read at once while a page's rows are made (each costs a read or two). */
const ROW_READS = 8;

export interface RunRow {
  kind: 'langgraph' | 'openai-agents';
  streamId: string;
  id: string;
  ns: string;
  lastStep: string;
  status: RunStatus;
  updatedAt: string;
}

const SESSION_START = /^\/(items|life)$/;

/** Whether the stream's first event makes an OpenAI Agents session's state. */
const isSession = async (api: Api, id: string): Promise<boolean> => {
  const page = await eventsFrom(api, id, { from: 1, limit: 1 });
  // Retention or a clear removed the first event: a session's state still holds its life.
  if (page.prunedSeq > 0) return typeof (await lifeOf(api, id)) === 'number';
  const first = page.events[0];
  if (first?.type !== 'hefesto.delta') return false;
  const ops = ((first.payload as { ops?: unknown[] }).ops ?? []) as Array<{ path?: string }>;
  const made: Record<string, unknown> = {};
  for (const op of ops.slice(0, 2))
    if (SESSION_START.test(op.path ?? ''))
      made[(op.path ?? '').slice(1)] = (op as { value?: unknown }).value;
  return isSessionState(made);
};

const lifeOf = async (api: Api, id: string): Promise<unknown> => {
  try {
    return (await api.get<{ value: unknown }>(stream(id, '/state'), { path: '/life' })).value;
  } catch (err) {
    if (err instanceof ApiError && err.code === 'ErrNotFound') return undefined;
    throw err;
  }
};

/**
 * The resume requests recorded for checkpoint `label` on the thread's resume stream (none when
 * that stream does not exist), oldest first.
 */
export const resumesOf = async (api: Api, id: string, label: string): Promise<LedgerEvent[]> => {
  const checkpointId = checkpointIdOf(label);
  const out: LedgerEvent[] = [];
  for (let from: number | null = 1; from !== null; ) {
    let page: Awaited<ReturnType<typeof eventsFrom>>;
    try {
      page = await eventsFrom(api, resumeStreamOf(id), { from, type: RESUME_EVENT, limit: 500 });
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return out;
      throw err;
    }
    for (const e of page.events)
      if ((e.payload as { checkpointId?: unknown } | null)?.checkpointId === checkpointId)
        out.push(e);
    from = page.next;
  }
  return out;
};

/** Whether a resume was recorded for the head checkpoint (`label`). */
export const resumeAsked = async (api: Api, id: string, label: string): Promise<boolean> =>
  (await resumesOf(api, id, label)).length > 0;

export const runRowOf = async (api: Api, row: StreamRow): Promise<RunRow | undefined> => {
  const thread = parseThreadStream(row.streamId);
  if (thread) {
    const t = await api.get<Tuple & { checkpoint: Tuple['checkpoint'] | null }>(
      stream(row.streamId, '/tuple'),
    );
    if (!t.checkpoint) return undefined;
    const [head] = stepsOf([t as Tuple]);
    const asked = await resumeAsked(api, row.streamId, t.checkpoint.label);
    return {
      kind: 'langgraph',
      streamId: row.streamId,
      id: thread.threadId,
      ns: thread.ns,
      lastStep: head
        ? `step ${head.step ?? '?'}${head.next.length ? ` → ${head.next.join(', ')}` : ''}`
        : '—',
      status: statusOf(head, asked),
      updatedAt: row.updatedAt,
    };
  }
  if (!(await isSession(api, row.streamId))) return undefined;
  const page = await api.get<{ items: unknown[]; seq: number }>(stream(row.streamId, '/history'), {
    limit: 20,
  });
  return {
    kind: 'openai-agents',
    streamId: row.streamId,
    id: row.streamId,
    ns: '—',
    lastStep: `${page.items.length === 20 ? '20+' : page.items.length} item${page.items.length === 1 ? '' : 's'} · seq ${page.seq}`,
    status: sessionStatus(page.items),
    updatedAt: row.updatedAt,
  };
};

export const runsView = (api: Api): HTMLElement => {
  const body = h('tbody');
  const status = h('p', { role: 'status' }, 'Looking for runs…');
  const more = h('button', { type: 'button', hidden: true }, 'More streams');
  let after: string | undefined;
  let shown = 0;
  const load = async () => {
    status.textContent = 'Looking for runs…';
    try {
      const page = await api.get<{ streams: StreamRow[]; next: string | null }>('/v1/streams', {
        after,
        limit: PAGE,
      });
      const rows = await mapLimit(page.streams, ROW_READS, (s) =>
        runRowOf(api, s).catch((err: unknown) => ({ streamId: s.streamId, error: err })),
      );
      for (const r of rows) {
        if (!r) continue;
        shown++;
        if ('error' in r) {
          // A stream that could not be read is shown, not dropped: it may be a run.
          body.append(
            h(
              'tr',
              { class: 'run status-error', 'data-run': r.streamId },
              h(
                'th',
                { scope: 'row' },
                h('a', { href: `#/r/${encodeURIComponent(r.streamId)}` }, r.streamId),
              ),
              h(
                'td',
                { colspan: '5', class: 'error' },
                `Could not read: ${describeError(r.error)}`,
              ),
            ),
          );
          continue;
        }
        body.append(
          h(
            'tr',
            { class: `run status-${r.status}`, 'data-run': r.streamId },
            h(
              'th',
              { scope: 'row' },
              h('a', { href: `#/r/${encodeURIComponent(r.streamId)}` }, r.id),
            ),
            h('td', {}, r.kind === 'langgraph' ? 'LangGraph' : 'OpenAI Agents'),
            h('td', {}, r.ns === '' ? '(root)' : r.ns),
            h('td', {}, r.lastStep),
            h('td', {}, h('span', { class: `pill status ${r.status}` }, r.status)),
            h('td', {}, time(Date.parse(r.updatedAt))),
          ),
        );
      }
      after = page.next ?? undefined;
      more.hidden = page.next === null;
      status.textContent =
        shown === 0 ? 'No agent runs found.' : `${shown} run${shown === 1 ? '' : 's'} shown.`;
    } catch (err) {
      status.textContent = `Could not list runs: ${describeError(err)}`;
    }
  };
  more.addEventListener('click', () => void load());
  void load();
  return h(
    'section',
    { class: 'runs', 'aria-labelledby': 'runs-title' },
    h('h2', { id: 'runs-title' }, 'Runs'),
    h(
      'p',
      { class: 'muted' },
      'LangGraph threads (HefestoSaver) and OpenAI Agents sessions (HefestoSession). ',
      h('a', { href: '#/streams' }, 'All streams'),
    ),
    h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ...['run', 'framework', 'namespace', 'last step', 'status', 'updated'].map((c) =>
              h('th', { scope: 'col' }, c),
            ),
          ),
        ),
        body,
      ),
    ),
    status,
    more,
  );
};
