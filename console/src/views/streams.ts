import type { Api, StreamRow } from '../api.js';
import { field, h, time } from '../dom.js';
import { describeError } from './context.js';

/** The tenant's streams, searchable by id prefix, a page at a time (GET /v1/streams). */

const PAGE = 50;

const leaseText = (row: StreamRow): string => {
  const l = row.lease;
  if (!l) return 'free';
  return `${l.owner} · epoch ${l.epoch}${l.draining ? ' · draining' : ''}`;
};

export const streamsView = (api: Api, prefix: string): HTMLElement => {
  const input = h('input', {
    type: 'search',
    name: 'prefix',
    value: prefix,
    autocomplete: 'off',
    placeholder: 'run-',
  });
  const body = h('tbody');
  const status = h('p', { role: 'status' });
  const more = h('button', { type: 'button', hidden: true }, 'More streams');
  let after: string | undefined;

  const load = async (reset: boolean) => {
    if (reset) {
      after = undefined;
      body.replaceChildren();
    }
    status.textContent = 'Loading…';
    try {
      const page = await api.get<{ streams: StreamRow[]; next: string | null }>('/v1/streams', {
        prefix: input.value.trim() || undefined,
        after,
        limit: PAGE,
      });
      for (const row of page.streams) {
        body.append(
          h(
            'tr',
            { 'data-stream': row.streamId },
            h(
              'th',
              { scope: 'row' },
              h('a', { href: `#/s/${encodeURIComponent(row.streamId)}` }, row.streamId),
            ),
            h('td', { class: 'num' }, row.seq),
            h('td', {}, time(Date.parse(row.updatedAt))),
            h('td', {}, h('span', { class: row.lease ? 'pill held' : 'pill' }, leaseText(row))),
          ),
        );
      }
      after = page.next ?? undefined;
      more.hidden = page.next === null;
      status.textContent =
        body.childElementCount === 0
          ? 'No streams match.'
          : `${body.childElementCount} stream${body.childElementCount === 1 ? '' : 's'} shown.`;
    } catch (err) {
      status.textContent = `Could not list streams: ${describeError(err)}`;
    }
  };
  more.addEventListener('click', () => void load(false));
  const form = h(
    'form',
    {
      class: 'toolbar',
      role: 'search',
      onsubmit: (e: Event) => {
        e.preventDefault();
        history.replaceState(
          null,
          '',
          `#/streams?prefix=${encodeURIComponent(input.value.trim())}`,
        );
        void load(true);
      },
    },
    field('Stream id prefix', input),
    h('button', { type: 'submit' }, 'Search'),
  );
  void load(true);
  return h(
    'section',
    { class: 'streams', 'aria-labelledby': 'streams-title' },
    h('h2', { id: 'streams-title' }, 'Streams'),
    form,
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
            ...['stream', 'head seq', 'updated', 'lease'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        body,
      ),
    ),
    status,
    more,
  );
};
