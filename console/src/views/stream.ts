import { type Api, ApiError, type Principal, type StreamHead, stream } from '../api.js';
import { fill, h, shortHash, time } from '../dom.js';
import type { PublicJwk } from '../proofs.js';
import { parseThreadStream } from '../runs.js';
import { chartsView } from './charts.js';
import { describeError, type StreamContext } from './context.js';
import { effectsView } from './effects.js';
import { stateView } from './state.js';
import { timelineView } from './timeline.js';
import { trustView } from './trust.js';

/** One stream: its head and five tabs (timeline, state, effects and lease, trust, charts). */

export type Tab = 'timeline' | 'state' | 'effects' | 'trust' | 'charts';

const TABS: Array<[Tab, string]> = [
  ['timeline', 'Timeline'],
  ['state', 'State & diff'],
  ['effects', 'Effects & lease'],
  ['trust', 'Trust'],
  ['charts', 'Charts'],
];

export const streamView = (
  api: Api,
  principal: Principal,
  streamId: string,
  tab: Tab,
  focusSeq?: number,
): HTMLElement => {
  const headBox = h('div', { class: 'head-facts', 'aria-live': 'polite' }, 'Reading the head…');
  const banner = h('div', { class: 'banner', role: 'alert', hidden: true });
  const panel = h('div', { class: 'panel', id: 'stream-panel' });
  let keys: Promise<PublicJwk[]> | undefined;
  const ctx: StreamContext = {
    signingKeys: () => {
      keys ??= api
        .get<{ keys?: PublicJwk[] }>('/v1/signing-keys')
        .then((r) => r.keys ?? [])
        .catch(() => []);
      return keys;
    },
    api,
    principal,
    streamId,
    head: undefined,
    badSeq: focusSeq,
    onBadSeq: (seq) => {
      ctx.badSeq = seq;
      banner.hidden = false;
      fill(
        banner,
        `This stream does not verify: first bad seq ${seq}. Reads fail closed from there on.`,
      );
    },
  };
  const base = `#/s/${encodeURIComponent(streamId)}`;
  const nav = h(
    'nav',
    { class: 'tabs', 'aria-label': 'Stream views' },
    ...TABS.map(([id, label]) =>
      h(
        'a',
        {
          href: id === 'timeline' ? base : `${base}/${id}`,
          'aria-current': id === tab ? 'page' : undefined,
        },
        label,
      ),
    ),
  );
  const show = () => {
    const view =
      tab === 'timeline'
        ? timelineView(ctx, focusSeq)
        : tab === 'state'
          ? stateView(ctx)
          : tab === 'effects'
            ? effectsView(ctx)
            : tab === 'charts'
              ? chartsView(ctx)
              : trustView(ctx, focusSeq);
    fill(panel, view);
  };
  void api
    .get<StreamHead>(stream(streamId))
    .then((head) => {
      ctx.head = head;
      fill(
        headBox,
        h(
          'dl',
          { class: 'facts' },
          h('dt', {}, 'head seq'),
          h('dd', { class: 'head-seq' }, head.seq),
          h('dt', {}, 'head hash'),
          h('dd', {}, h('code', { title: head.hash }, shortHash(head.hash))),
          h('dt', {}, 'state seq'),
          h('dd', {}, head.stateSeq),
          h('dt', {}, 'updated'),
          h('dd', {}, time(Date.parse(head.updatedAt))),
        ),
      );
    })
    .catch((err: unknown) => {
      fill(headBox, h('p', { class: 'error' }, `Head not readable: ${describeError(err)}`));
      if (err instanceof ApiError && typeof err.problem.firstBadSeq === 'number')
        ctx.onBadSeq(err.problem.firstBadSeq);
    })
    .finally(show);
  return h(
    'section',
    { class: 'stream', 'aria-labelledby': 'stream-title' },
    h(
      'p',
      { class: 'crumbs' },
      h('a', { href: '#/streams' }, '← Streams'),
      parseThreadStream(streamId)
        ? h(
            'a',
            { href: `#/r/${encodeURIComponent(streamId)}`, class: 'as-run' },
            'Open as LangGraph run',
          )
        : null,
    ),
    h('h2', { id: 'stream-title' }, streamId),
    headBox,
    banner,
    nav,
    panel,
  );
};
