import { type EventsPage, type LedgerEvent, stream } from '../api.js';
import { showBidiControls } from '../bidi.js';
import { type Change, diffStates } from '../diff.js';
import { field, fill, h, summary } from '../dom.js';
import { jsonTree } from '../json-tree.js';
import { describeError, type StreamContext } from './context.js';

/**
 * State at any seq (a collapsible tree), the diff between two seqs, the checkpoint label of
 * the seq shown (a LangGraph checkpoint id, on `hefesto.delta` payloads that carry `label`),
 * and a fork from the seq shown, after a confirmation.
 */

const DELTA = 'hefesto.delta';

interface StateResult {
  seq: number;
  state: unknown;
  stateDigest: string;
}

interface Labelled {
  label: string;
  seq: number;
}

const deltaLabel = (event: LedgerEvent | undefined): string | undefined => {
  const label = (event?.payload as { label?: unknown } | null)?.label;
  return event?.type === DELTA && typeof label === 'string' ? label : undefined;
};

/**
 * The labelled checkpoint (a LangGraph checkpoint id) whose state is the state at `seq`: the
 * delta at `seq` itself, else the newest labelled checkpoint before it, as long as no other
 * delta lies between the two (events that are not deltas leave the state as it was).
 */
export const checkpointAt = async (
  ctx: StreamContext,
  seq: number,
): Promise<Labelled | undefined> => {
  if (seq < 1) return undefined;
  const events = (from: number, type?: string) =>
    ctx.api.get<EventsPage>(stream(ctx.streamId, '/events'), { from, limit: 1, type });
  const own = (await events(seq)).events[0];
  if (own?.type === DELTA) {
    const label = deltaLabel(own);
    return label ? { label, seq } : undefined;
  }
  const { checkpoints } = await ctx.api.get<{ checkpoints: Labelled[] }>(
    stream(ctx.streamId, '/checkpoints'),
    { before: seq + 1, limit: 1 },
  );
  const newest = checkpoints[0];
  if (!newest) return undefined;
  const between = (await events(newest.seq + 1, DELTA)).events[0];
  return between && between.seq <= seq ? undefined : newest;
};

export const changeTable = (changes: Change[]): HTMLElement => {
  if (changes.length === 0)
    return h('p', { class: 'muted' }, 'No difference: the two states are equal.');
  return h(
    'table',
    { class: 'diff' },
    h('caption', {}, `${changes.length} change${changes.length === 1 ? '' : 's'}`),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, 'change'),
        h('th', { scope: 'col' }, 'path'),
        h('th', { scope: 'col' }, 'before'),
        h('th', { scope: 'col' }, 'after'),
      ),
    ),
    h(
      'tbody',
      {},
      ...changes.map((c) =>
        h(
          'tr',
          { class: `op-${c.op}` },
          h('td', {}, c.op),
          h('td', {}, h('code', {}, c.from ? `${c.from} → ${c.path || '/'}` : c.path || '/')),
          h('td', { class: 'before' }, c.op === 'add' ? '' : h('code', {}, summary(c.before, 200))),
          h(
            'td',
            { class: 'after' },
            c.op === 'remove' ? '' : h('code', {}, summary(c.after, 200)),
          ),
        ),
      ),
    ),
  );
};

export const stateView = (ctx: StreamContext): HTMLElement => {
  const headSeq = ctx.head?.seq ?? 0;
  const atInput = h('input', {
    type: 'number',
    name: 'at',
    min: 0,
    max: headSeq,
    value: headSeq,
    inputmode: 'numeric',
  });
  const fromInput = h('input', {
    type: 'number',
    name: 'from',
    min: 0,
    max: headSeq,
    value: Math.max(0, (ctx.head?.stateSeq ?? 1) - 1),
    inputmode: 'numeric',
  });
  const toInput = h('input', {
    type: 'number',
    name: 'to',
    min: 0,
    max: headSeq,
    value: headSeq,
    inputmode: 'numeric',
  });
  const stateOut = h('div', { class: 'state-out', 'aria-live': 'polite' });
  const diffOut = h('div', { class: 'diff-out', 'aria-live': 'polite' });
  let shownSeq = headSeq;

  const read = (at: number) => ctx.api.get<StateResult>(stream(ctx.streamId, '/state'), { at });

  const show = async () => {
    fill(stateOut, h('p', {}, 'Loading…'));
    try {
      const at = Number(atInput.value);
      const [result, labelled] = await Promise.all([
        read(at),
        checkpointAt(ctx, at).catch(() => undefined),
      ]);
      shownSeq = result.seq;
      fill(
        stateOut,
        h(
          'p',
          { class: 'state-meta' },
          `State at seq ${result.seq}`,
          labelled ? ' · checkpoint label ' : '',
          labelled ? h('strong', { class: 'label' }, labelled.label) : '',
          labelled && labelled.seq !== result.seq ? ` (written at seq ${labelled.seq})` : '',
          ' · digest ',
          h('code', {}, result.stateDigest.slice(0, 16)),
        ),
        jsonTree(result.state, 2),
      );
      forkButton.disabled = false;
      forkButton.textContent = `Fork from seq ${result.seq}…`;
    } catch (err) {
      fill(
        stateOut,
        h(
          'p',
          { class: 'error', role: 'alert' },
          `Could not read the state: ${describeError(err)}`,
        ),
      );
    }
  };

  const diff = async () => {
    fill(diffOut, h('p', {}, 'Loading…'));
    try {
      const [a, b] = await Promise.all([
        read(Number(fromInput.value)),
        read(Number(toInput.value)),
      ]);
      fill(
        diffOut,
        h('p', { class: 'state-meta' }, `From seq ${a.seq} to seq ${b.seq}`),
        changeTable(diffStates(a.state, b.state)),
      );
    } catch (err) {
      fill(
        diffOut,
        h('p', { class: 'error', role: 'alert' }, `Could not diff: ${describeError(err)}`),
      );
    }
  };

  // Fork: a modal dialog (focus moves into it, Escape cancels) that names the new stream.
  const newId = h('input', {
    type: 'text',
    name: 'newStreamId',
    required: true,
    pattern: '[A-Za-z0-9][A-Za-z0-9._:\\-]{0,127}',
    autocomplete: 'off',
  });
  const forkError = h('p', { class: 'error', role: 'alert' });
  const dialog = h(
    'dialog',
    { class: 'confirm', 'aria-labelledby': 'fork-title' },
    h(
      'form',
      {
        method: 'dialog',
        onsubmit: async (e: Event) => {
          e.preventDefault();
          try {
            await ctx.api.post(stream(ctx.streamId, '/fork'), {
              at: shownSeq,
              newStreamId: newId.value,
            });
            dialog.close();
            location.hash = `#/s/${encodeURIComponent(newId.value)}`;
          } catch (err) {
            forkError.textContent = `Not forked: ${describeError(err)}`;
          }
        },
      },
      h('h3', { id: 'fork-title' }, 'Fork this stream?'),
      h('p', { class: 'fork-what' }),
      field('New stream id', newId),
      forkError,
      h(
        'div',
        { class: 'actions' },
        // Not a submit button: Enter in the field (implicit submission) must confirm the fork.
        h('button', { type: 'button', onclick: () => dialog.close() }, 'Cancel'),
        h('button', { type: 'submit', class: 'primary' }, 'Fork stream'),
      ),
    ),
  );
  const forkButton = h(
    'button',
    {
      type: 'button',
      disabled: true,
      onclick: () => {
        const what = dialog.querySelector('.fork-what');
        if (what)
          what.textContent = showBidiControls(
            `A new stream starts from the state of ${ctx.streamId} at seq ${shownSeq}. ${ctx.streamId} itself is not changed.`,
          );
        newId.value = `${ctx.streamId}.fork-${shownSeq}`.slice(0, 128);
        forkError.textContent = '';
        dialog.showModal();
      },
    },
    'Fork from this seq…',
  );

  const form = (label: string, onSubmit: () => Promise<void>, ...children: Node[]) =>
    h(
      'form',
      {
        class: 'toolbar',
        'aria-label': label,
        onsubmit: (e: Event) => {
          e.preventDefault();
          void onSubmit();
        },
      },
      ...children,
    );

  const root = h(
    'section',
    { class: 'state', 'aria-label': 'State' },
    h('h3', {}, 'State at a seq'),
    form(
      'State at a seq',
      show,
      field('State at seq', atInput),
      h('button', { type: 'submit' }, 'Show state'),
      forkButton,
    ),
    stateOut,
    h('h3', {}, 'Diff between two seqs'),
    form(
      'Diff',
      diff,
      field('From seq', fromInput),
      field('To seq', toInput),
      h('button', { type: 'submit' }, 'Diff'),
    ),
    diffOut,
    dialog,
  );
  void show();
  return root;
};
