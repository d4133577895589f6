import { type Api, eventsFrom, type LedgerEvent, stream } from '../api.js';
import { diffStates } from '../diff.js';
import { field, fill, h, summary, time, uid } from '../dom.js';
import { eventSummary } from '../event-summary.js';
import { graphPicture } from '../graph-picture.js';
import { jsonTree } from '../json-tree.js';
import {
  bytes,
  eventRate,
  gapsOf,
  lineChart,
  millis,
  type PathNode,
  pathPicture,
  perSecond,
} from '../pictures.js';
import {
  agentsItem,
  applyOps,
  type ChatMessage,
  COPY_EVENT,
  graphShapeOf,
  parseThreadStream,
  pathTo,
  RESUME_EVENT,
  type RunStatus,
  resumeStreamOf,
  type Step,
  sessionStatus,
  statusOf,
  stepsOf,
  type Tuple,
  threadStreamId,
  transcriptOf,
  valueSummary,
  visitedIn,
  wholeStates,
} from '../runs.js';
import { describeError } from './context.js';
import { resumesOf } from './runs.js';
import { changeTable } from './state.js';

/**
 * One agent run: a LangGraph thread (its steps with the node that ran, its writes, the nodes
 * next and interrupts; its messages as a chat; its channels at a step and the diff between
 * two steps; the path it took as a picture; state size and event rate as charts; fork into a
 * new thread and resume an interrupt, each after a confirmation) or an OpenAI Agents session
 * (its changes as steps, its items as a chat, items at a seq and their diff, the charts).
 * Reads through the public API only: …/tuples, …/tuple, …/events, …/history.
 */

const MAX_TUPLES = 1000;
const MAX_EVENTS = 2000;

const readAll = async <T>(
  read: (cursor: number | undefined) => Promise<{ items: T[]; next: number | null }>,
  max: number,
): Promise<T[]> => {
  const out: T[] = [];
  let cursor: number | undefined;
  for (;;) {
    const page = await read(cursor);
    out.push(...page.items);
    if (page.next === null || out.length >= max) return out;
    cursor = page.next;
  }
};

/** The stream's events from `start` (default: its first kept one, past any pruning point). */
const eventsOf = (api: Api, id: string, type?: string, start = 1): Promise<LedgerEvent[]> =>
  readAll(async (from) => {
    const page = await eventsFrom(api, id, { from: from ?? start, limit: 500, type });
    return { items: page.events, next: page.next };
  }, MAX_EVENTS);

const tuplesOf = (api: Api, id: string): Promise<Tuple[]> =>
  readAll(async (before) => {
    const page = await api.get<{ tuples: Parameters<typeof wholeStates>[0]; next: number | null }>(
      stream(id, '/tuples'),
      { limit: 100, before },
    );
    return { items: wholeStates(page.tuples), next: page.next };
  }, MAX_TUPLES);

const statusPill = (s: RunStatus) => h('span', { class: `pill status ${s}` }, s);

const list = (items: string[]) => (items.length === 0 ? '—' : items.join(', '));

/** A chat transcript: one bubble per message, tool calls and results named. */
export const transcriptView = (messages: ChatMessage[]): HTMLElement =>
  messages.length === 0
    ? h('p', { class: 'muted' }, 'No messages.')
    : h(
        'ol',
        { class: 'transcript', 'aria-label': 'Transcript' },
        ...messages.map((m) =>
          h(
            'li',
            { class: `msg role-${m.role.replace(/[^a-z-]/g, '')}` },
            h(
              'p',
              { class: 'msg-role' },
              m.role,
              m.name ? ` · ${m.name}` : '',
              m.toolCallId ? ` · result of ${m.toolCallId}` : '',
            ),
            m.text ? h('p', { class: 'msg-text' }, m.text) : null,
            ...m.toolCalls.map((c) =>
              h(
                'p',
                { class: 'tool-call' },
                h('span', { class: 'tool-tag' }, 'tool call'),
                ' ',
                h('code', {}, `${c.name}(${c.args})`),
                c.id ? ` · ${c.id}` : '',
              ),
            ),
          ),
        ),
      );

const chartsOf = (events: LedgerEvent[], sizes: Array<[number, number]>, sizeTitle: string) =>
  h(
    'div',
    { class: 'charts' },
    lineChart({ points: sizes, title: sizeTitle, unit: bytes }, 'size-chart'),
    lineChart(
      { points: eventRate(events), title: 'Event rate over seq', unit: perSecond },
      'rate-chart',
    ),
    lineChart(
      { points: gapsOf(events), title: 'Time since the event before', unit: millis },
      'gap-chart',
    ),
  );

/** A modal confirmation: `body` nodes, a Cancel and a confirm button; Escape cancels. */
const confirmDialog = (
  title: string,
  confirmText: string,
  onConfirm: (error: HTMLElement) => Promise<boolean>,
  ...body: Node[]
): HTMLDialogElement => {
  const titleId = uid('dlg');
  const error = h('p', { class: 'error', role: 'alert' });
  const dialog = h(
    'dialog',
    { class: 'confirm', 'aria-labelledby': titleId },
    h(
      'form',
      {
        method: 'dialog',
        onsubmit: async (e: Event) => {
          e.preventDefault();
          error.textContent = '';
          if (await onConfirm(error)) dialog.close();
        },
      },
      h('h3', { id: titleId }, title),
      ...body,
      error,
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'button', onclick: () => dialog.close() }, 'Cancel'),
        h('button', { type: 'submit', class: 'primary' }, confirmText),
      ),
    ),
  );
  return dialog;
};

const stepOption = (s: Step) =>
  h('option', { value: s.label }, `step ${s.step ?? '?'} · seq ${s.seq} · ${list(s.ran)}`);

const langGraphRun = async (api: Api, streamId: string, root: HTMLElement) => {
  const thread = parseThreadStream(streamId) ?? { threadId: streamId, ns: '' };
  const [tuples, events] = await Promise.all([tuplesOf(api, streamId), eventsOf(api, streamId)]);
  const steps = stepsOf(tuples);
  const head = steps.reduce<Step | undefined>((a, s) => (!a || s.seq > a.seq ? s : a), undefined);
  const resumes = head === undefined ? [] : await resumesOf(api, streamId, head.label);
  const lastResume = resumes.at(-1);
  const status = statusOf(head, lastResume !== undefined);
  const copy = events.find((e) => e.type === COPY_EVENT)?.payload as
    | { from?: { streamId?: string; label?: string } }
    | undefined;
  const forkedFrom = copy?.from?.streamId
    ? `${parseThreadStream(copy.from.streamId)?.threadId ?? copy.from.streamId} at ${copy.from.label ?? '?'}`
    : undefined;
  const path = pathTo(steps, head);
  const byLabel = new Map(steps.map((s) => [s.label, s]));

  // — facts and actions —
  const facts = h(
    'dl',
    { class: 'facts run-facts' },
    h('dt', {}, 'thread'),
    h('dd', {}, thread.threadId),
    h('dt', {}, 'namespace'),
    h('dd', {}, thread.ns === '' ? '(root)' : thread.ns),
    h('dt', {}, 'status'),
    h('dd', { class: 'run-status' }, statusPill(status)),
    h('dt', {}, 'last step'),
    h('dd', {}, head ? `step ${head.step ?? '?'} (seq ${head.seq})` : '—'),
    h('dt', {}, 'next'),
    h('dd', {}, list(head?.next ?? [])),
    h('dt', {}, 'updated'),
    h('dd', {}, head?.ts ? time(Date.parse(head.ts)) : '—'),
    forkedFrom ? h('dt', {}, 'forked from') : null,
    forkedFrom ? h('dd', {}, forkedFrom) : null,
  );

  const newThread = h('input', {
    type: 'text',
    name: 'newThreadId',
    required: true,
    pattern: '[A-Za-z0-9\\-]{1,56}',
    autocomplete: 'off',
  });
  const forkAt = h('select', { name: 'forkAt' }, ...[...steps].reverse().map(stepOption));
  const forkProgress = h('progress', {
    class: 'fork-progress',
    'aria-label': 'Checkpoints copied',
    hidden: true,
  });
  const fork = confirmDialog(
    'Fork this run?',
    'Fork run',
    async (error) => {
      const to = threadStreamId(newThread.value, thread.ns);
      try {
        // The server copies a bounded part per call (POST …/copy-thread): call until done.
        for (let calls = 0; ; calls++) {
          const p = await api.post<{ done: boolean; checkpoints: number; copied: number }>(
            stream(streamId, '/copy-thread'),
            { label: forkAt.value, to: { streamId: to, threadId: newThread.value } },
          );
          forkProgress.value = p.copied;
          forkProgress.max = Math.max(1, p.checkpoints);
          forkProgress.textContent = `${p.copied} of ${p.checkpoints}`;
          forkProgress.hidden = false;
          if (p.done) break;
          if (calls >= 10_000) throw new Error('the copy makes no progress');
        }
        location.hash = `#/r/${encodeURIComponent(to)}`;
        return true;
      } catch (err) {
        error.textContent = `Not forked: ${describeError(err)}`;
        return false;
      }
    },
    h(
      'p',
      {},
      'A new thread starts with the checkpoints up to the one chosen (their pending writes too); ' +
        'HefestoSaver resumes it like any thread. This run is not changed.',
    ),
    field('Fork at', forkAt),
    field('New thread id', newThread, 'Letters, digits and -'),
    forkProgress,
  );

  const interrupt = head?.interrupts[0];
  const resumeValue = h('textarea', { name: 'resumeValue', rows: 3, spellcheck: 'false' });
  const resume = confirmDialog(
    'Resume this interrupt?',
    'Record resume',
    async (error) => {
      let value: unknown;
      try {
        value = JSON.parse(resumeValue.value);
      } catch {
        error.textContent = 'The resume value must be JSON (a string in double quotes).';
        return false;
      }
      try {
        await api.post(stream(resumeStreamOf(streamId), '/events'), {
          events: [{ type: RESUME_EVENT, payload: { checkpointId: head?.checkpointId, value } }],
        });
        location.reload();
        return true;
      } catch (err) {
        error.textContent = `Not recorded: ${describeError(err)}`;
        return false;
      }
    },
    h(
      'p',
      {},
      `The value is recorded on the thread for your worker to pick up (pendingResume) and run ` +
        `the graph with Command({ resume }). The console does not run your graph.`,
    ),
    h('div', { class: 'interrupt-payload' }, interrupt ? jsonTree(interrupt.value, 2) : ''),
    field('Resume value (JSON)', resumeValue),
  );
  const actions = h(
    'div',
    { class: 'actions run-actions' },
    h(
      'button',
      {
        type: 'button',
        disabled: steps.length === 0,
        onclick: () => {
          newThread.value = `${thread.threadId}-fork`.replace(/[^A-Za-z0-9-]/g, '-').slice(0, 56);
          fork.showModal();
        },
      },
      'Fork this run…',
    ),
    status === 'interrupted'
      ? h(
          'button',
          {
            type: 'button',
            onclick: () => {
              resumeValue.value = '"yes"';
              resume.showModal();
            },
          },
          'Resume interrupt…',
        )
      : null,
    lastResume
      ? h(
          'p',
          { class: 'resume-asked' },
          `Resume recorded (seq ${lastResume.seq}): ${summary((lastResume.payload as { value?: unknown } | null)?.value, 80)}; waiting for the worker.`,
        )
      : null,
  );

  // — path picture —
  const nodes: PathNode[] = path.map((s) => ({
    name: list(s.ran),
    sub: `step ${s.step ?? '?'} · seq ${s.seq}`,
    interrupted: s.interrupts.length > 0,
    failed: s.errors.length > 0,
    forked: s.forked,
    title: `${s.checkpointId}: next ${list(s.next)}`,
  }));
  if (head && head.next.length > 0)
    nodes.push({
      name: list(head.next),
      sub: status === 'interrupted' ? 'waiting (interrupt)' : 'next',
      interrupted: status === 'interrupted',
    });
  // The whole graph when the saver recorded its shape (recordGraph), else the path alone.
  const shape = graphShapeOf(tuples.find((t) => t.checkpoint.label === head?.label)?.state);
  const picture = shape
    ? h(
        'figure',
        { class: 'picture' },
        graphPicture(
          shape,
          {
            ...visitedIn(shape, path, head?.next ?? [], status === 'done'),
            interrupted: status === 'interrupted',
          },
          `Graph of ${thread.threadId}`,
          forkedFrom,
        ),
        h(
          'figcaption',
          { class: 'muted' },
          'The graph as its saver recorded it (recordGraph), the nodes and edges this run took in ' +
            'bold, the rest faint. ‖ waiting on an interrupt · ▸ next · dashed edge: conditional.',
        ),
      )
    : h(
        'figure',
        { class: 'picture' },
        pathPicture(nodes, `Path of ${thread.threadId}`, forkedFrom),
        h(
          'figcaption',
          { class: 'muted' },
          'The nodes this run went through, in order (its checkpoints’ parent chain). The graph’s edges ' +
            'are not stored: only the visited path is drawn (a saver that calls recordGraph(graph) ' +
            'records them). ‖ interrupt · ✖ error · ↱ forked checkpoint.',
        ),
      );

  // — steps —
  const stepsTable = h(
    'table',
    { class: 'steps' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['step', 'seq', 'node', 'writes', 'next', 'interrupts'].map((c) =>
          h('th', { scope: 'col' }, c),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      ...steps.map((s) =>
        h(
          'tr',
          {
            class: `step${s.interrupts.length ? ' interrupted' : ''}${s.forked ? ' forked' : ''}`,
            'data-label': s.label,
          },
          h('td', { class: 'num' }, s.step ?? '?'),
          h('td', { class: 'num' }, s.seq),
          h('td', { class: 'ran' }, list(s.ran)),
          h(
            'td',
            { class: 'writes' },
            s.writes.length === 0
              ? '—'
              : h(
                  'ul',
                  {},
                  ...s.writes.map((w) =>
                    h('li', {}, h('code', {}, w.channel), ' ', valueSummary(w.value, 80)),
                  ),
                ),
          ),
          h('td', { class: 'next' }, list(s.next)),
          h(
            'td',
            { class: 'interrupts' },
            s.interrupts.length === 0
              ? '—'
              : h(
                  'ul',
                  {},
                  ...s.interrupts.map((i) =>
                    h('li', {}, `${i.node}: `, h('code', {}, summary(i.value, 120))),
                  ),
                ),
          ),
        ),
      ),
    ),
  );

  // — state at a step, diff between two —
  const stateAt = h('select', { name: 'stateAt' }, ...[...steps].reverse().map(stepOption));
  const stateOut = h('div', { class: 'state-out' });
  const showState = () => {
    const s = byLabel.get(stateAt.value);
    if (!s) return;
    fill(
      stateOut,
      h(
        'p',
        { class: 'state-meta' },
        `Channels at step ${s.step ?? '?'} (checkpoint ${s.checkpointId})`,
      ),
      jsonTree(s.channels, 2),
    );
  };
  stateAt.addEventListener('change', showState);
  const diffFrom = h('select', { name: 'diffFrom' }, ...steps.map(stepOption));
  const diffTo = h('select', { name: 'diffTo' }, ...[...steps].reverse().map(stepOption));
  if (steps.length > 1) diffFrom.value = (steps.at(-2) as Step).label;
  const diffOut = h('div', { class: 'diff-out' });
  const showDiff = () => {
    const a = byLabel.get(diffFrom.value);
    const b = byLabel.get(diffTo.value);
    if (!a || !b) return;
    fill(diffOut, changeTable(diffStates(a.channels, b.channels)));
  };
  const chForm = h(
    'form',
    {
      class: 'toolbar',
      'aria-label': 'Channel diff',
      onsubmit: (e: Event) => {
        e.preventDefault();
        showDiff();
      },
    },
    field('From step', diffFrom),
    field('To step', diffTo),
    h('button', { type: 'submit' }, 'Diff channels'),
  );

  const lastChannels = head?.channels ?? {};
  fill(
    root,
    facts,
    actions,
    h('h3', {}, 'Path'),
    picture,
    h('h3', {}, 'Steps'),
    h('div', { class: 'scroll' }, stepsTable),
    h('h3', {}, 'Transcript'),
    transcriptView(transcriptOf(lastChannels)),
    h('h3', {}, 'State at a step'),
    h('div', { class: 'toolbar' }, field('Step', stateAt)),
    stateOut,
    h('h3', {}, 'Diff between two steps'),
    chForm,
    diffOut,
    h('h3', {}, 'Charts'),
    chartsOf(
      events,
      steps.map((s) => [s.seq, s.size]),
      'State size over seq',
    ),
    fork,
    resume,
  );
  showState();
  showDiff();
};

const sessionRun = async (api: Api, streamId: string, root: HTMLElement) => {
  const [events, history] = await Promise.all([
    eventsOf(api, streamId),
    api.get<{ items: unknown[]; seq: number }>(stream(streamId, '/history')),
  ]);
  let state: Record<string, unknown> = {};
  const states = new Map<number, unknown[]>();
  const sizes: Array<[number, number]> = [];
  const rows: HTMLElement[] = [];
  for (const e of events) {
    const ops = (e.payload as { ops?: unknown[] } | null)?.ops;
    if ((e.type !== 'hefesto.delta' && e.type !== 'hefesto.migration') || !Array.isArray(ops))
      continue;
    state = structuredClone(state);
    applyOps(state, ops);
    const items = Array.isArray(state.items) ? (state.items as unknown[]) : [];
    states.set(e.seq, items);
    sizes.push([e.seq, new TextEncoder().encode(JSON.stringify(state)).length]);
    rows.push(
      h(
        'tr',
        { class: 'step' },
        h('td', { class: 'num' }, e.seq),
        h('td', {}, time(e.ts)),
        h('td', {}, eventSummary(e.type, e.payload, 90)),
        h('td', { class: 'num' }, items.length),
      ),
    );
  }
  const status = sessionStatus(history.items);
  const seqs = [...states.keys()];
  const option = (seq: number) =>
    h('option', { value: seq }, `seq ${seq} · ${states.get(seq)?.length ?? 0} items`);
  const stateAt = h('select', { name: 'stateAt' }, ...[...seqs].reverse().map(option));
  const stateOut = h('div', { class: 'state-out' });
  const showState = () => fill(stateOut, jsonTree(states.get(Number(stateAt.value)) ?? [], 2));
  stateAt.addEventListener('change', showState);
  const diffFrom = h('select', { name: 'diffFrom' }, ...seqs.map(option));
  const diffTo = h('select', { name: 'diffTo' }, ...[...seqs].reverse().map(option));
  if (seqs.length > 1) diffFrom.value = String(seqs.at(-2));
  const diffOut = h('div', { class: 'diff-out' });
  const showDiff = () =>
    fill(
      diffOut,
      changeTable(
        diffStates(
          states.get(Number(diffFrom.value)) ?? [],
          states.get(Number(diffTo.value)) ?? [],
        ),
      ),
    );
  fill(
    root,
    h(
      'dl',
      { class: 'facts run-facts' },
      h('dt', {}, 'session'),
      h('dd', {}, streamId),
      h('dt', {}, 'status'),
      h('dd', { class: 'run-status' }, statusPill(status)),
      h('dt', {}, 'last step'),
      h('dd', {}, `seq ${history.seq} · ${history.items.length} items`),
      h('dt', {}, 'updated'),
      h('dd', {}, events.at(-1) ? time((events.at(-1) as LedgerEvent).ts) : '—'),
    ),
    h('h3', {}, 'Transcript'),
    transcriptView(history.items.map(agentsItem)),
    h('h3', {}, 'Changes'),
    h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        { class: 'steps' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ...['seq', 'time', 'change', 'items'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        h('tbody', {}, ...rows),
      ),
    ),
    h('h3', {}, 'Items at a seq'),
    h('div', { class: 'toolbar' }, field('Seq', stateAt)),
    stateOut,
    h('h3', {}, 'Diff between two seqs'),
    h(
      'form',
      {
        class: 'toolbar',
        'aria-label': 'Items diff',
        onsubmit: (e: Event) => {
          e.preventDefault();
          showDiff();
        },
      },
      field('From seq', diffFrom),
      field('To seq', diffTo),
      h('button', { type: 'submit' }, 'Diff items'),
    ),
    diffOut,
    h('h3', {}, 'Charts'),
    chartsOf(events, sizes, 'Session size over seq'),
  );
  showState();
  showDiff();
};

export const runView = (api: Api, streamId: string): HTMLElement => {
  const body = h('div', { class: 'run-body', 'aria-live': 'polite' }, 'Reading the run…');
  const thread = parseThreadStream(streamId);
  void (thread ? langGraphRun(api, streamId, body) : sessionRun(api, streamId, body)).catch(
    (err: unknown) =>
      fill(body, h('p', { class: 'error' }, `Could not read the run: ${describeError(err)}`)),
  );
  return h(
    'section',
    { class: 'run', 'aria-labelledby': 'run-title' },
    h(
      'p',
      { class: 'crumbs' },
      h('a', { href: '#/runs' }, '← Runs'),
      ' · ',
      h('a', { href: `#/s/${encodeURIComponent(streamId)}` }, 'Stream view'),
    ),
    h('h2', { id: 'run-title' }, thread ? `Thread ${thread.threadId}` : `Session ${streamId}`),
    body,
  );
};
