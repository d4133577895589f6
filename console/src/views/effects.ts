import { ApiError, stream } from '../api.js';
import { fill, h, summary, time } from '../dom.js';
import { describeError, type StreamContext } from './context.js';

/** The stream's lease (holder, epoch, draining) and its effects with status and saga. */

interface Lease {
  owner: string;
  epoch: number;
  expiresAt: string;
  draining: boolean;
  exclusive: boolean;
  active?: boolean;
}

interface Effect {
  effectKey: string;
  kind: string;
  status: 'acquired' | 'unknown_outcome' | 'completed' | 'failed';
  sagaId: string | null;
  attempts: number;
  result: unknown;
  error: unknown;
  createdAt: number;
  finishedAt: number | null;
}

const STATUS_TEXT: Record<Effect['status'], string> = {
  acquired: 'acquired',
  unknown_outcome: 'unknown outcome',
  completed: 'completed',
  failed: 'failed',
};

const leasePanel = (ctx: StreamContext): HTMLElement => {
  const out = h('div', { class: 'lease' }, h('p', {}, 'Loading…'));
  void ctx.api
    .get<Lease>(stream(ctx.streamId, '/lease'))
    .then((l) => {
      const held = l.active !== false && Date.parse(l.expiresAt) > Date.now();
      fill(
        out,
        h(
          'dl',
          { class: 'facts' },
          h('dt', {}, 'state'),
          h(
            'dd',
            {},
            held ? (l.draining ? 'held, draining' : 'held') : 'free (released or expired)',
          ),
          h('dt', {}, 'holder'),
          h('dd', {}, l.owner),
          h('dt', {}, 'epoch'),
          h('dd', {}, l.epoch),
          h('dt', {}, 'draining'),
          h('dd', {}, l.draining ? 'yes' : 'no'),
          h('dt', {}, 'exclusive'),
          h('dd', {}, l.exclusive ? 'yes' : 'no'),
          h('dt', {}, 'expires'),
          h('dd', {}, time(Date.parse(l.expiresAt))),
        ),
      );
    })
    .catch((err: unknown) => {
      const none = err instanceof ApiError && err.status === 404;
      fill(
        out,
        h(
          'p',
          { class: none ? 'muted' : 'error' },
          none ? 'No worker has taken a lease on this stream.' : describeError(err),
        ),
      );
    });
  return h('section', { 'aria-label': 'Lease' }, h('h3', {}, 'Lease'), out);
};

export const effectsView = (ctx: StreamContext): HTMLElement => {
  const body = h('tbody');
  const more = h('button', { type: 'button', hidden: true }, 'More effects');
  const note = h('p', { role: 'status' });
  let after: string | undefined;
  const load = async () => {
    try {
      const page = await ctx.api.get<{ effects: Effect[]; next: string | null }>(
        stream(ctx.streamId, '/effects'),
        { after, limit: 100 },
      );
      for (const e of page.effects) {
        body.append(
          h(
            'tr',
            { class: `effect status-${e.status}` },
            h('td', {}, h('code', {}, e.effectKey)),
            h('td', {}, e.kind),
            h('td', {}, h('span', { class: `pill ${e.status}` }, STATUS_TEXT[e.status])),
            h('td', {}, e.sagaId ?? '—'),
            h('td', {}, e.attempts),
            h('td', {}, time(e.createdAt)),
            h(
              'td',
              {},
              e.status === 'completed'
                ? summary(e.result, 60)
                : e.status === 'failed'
                  ? summary(e.error, 60)
                  : '',
            ),
          ),
        );
      }
      after = page.next ?? undefined;
      more.hidden = page.next === null;
      note.textContent = body.childElementCount === 0 ? 'No effects on this stream.' : '';
    } catch (err) {
      note.textContent = `Could not list effects: ${describeError(err)}`;
    }
  };
  more.addEventListener('click', () => void load());
  void load();
  return h(
    'section',
    { class: 'effects', 'aria-label': 'Effects and lease' },
    leasePanel(ctx),
    h('h3', {}, 'Effects'),
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
            ...['effect', 'kind', 'status', 'saga', 'attempts', 'created', 'outcome'].map((c) =>
              h('th', { scope: 'col' }, c),
            ),
          ),
        ),
        body,
      ),
    ),
    note,
    more,
  );
};
