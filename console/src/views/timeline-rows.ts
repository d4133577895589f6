import type { LedgerEvent } from '../api.js';
import { fill, h, time, uid } from '../dom.js';
import { eventSummary } from '../event-summary.js';
import { jsonTree } from '../json-tree.js';
import type { StreamContext } from './context.js';

/**
 * The timeline's rows: an event (seq, time, type, a one-line summary, its checkpoint label),
 * expandable to its payload, hash and prevHash; and the row standing for the first bad seq.
 */

const labelOf = (event: LedgerEvent): string | undefined => {
  const label = (event.payload as { label?: unknown } | null)?.label;
  return event.type === 'hefesto.delta' && typeof label === 'string' ? label : undefined;
};

/** The payload as stored, one click away: its JSON, indented, in a <details>. */
export const rawJson = (value: unknown): HTMLElement =>
  h(
    'details',
    { class: 'raw' },
    h('summary', {}, 'Raw JSON'),
    h('pre', { class: 'raw-json' }, JSON.stringify(value, null, 2) ?? 'undefined'),
  );

export const eventRow = (ctx: StreamContext, event: LedgerEvent, bad: boolean): HTMLElement => {
  const detailId = uid('ev');
  const detail = h('div', { id: detailId, class: 'event-detail', hidden: true });
  const toggle = h(
    'button',
    {
      type: 'button',
      class: 'event-toggle',
      'aria-expanded': 'false',
      'aria-controls': detailId,
      'aria-label': `Event ${event.seq}, ${event.type}: show details`,
    },
    h('span', { class: 'seq' }, event.seq),
    h('span', { class: 'ts' }, time(event.ts)),
    h('span', { class: 'type' }, event.type),
    h('span', { class: 'sum' }, eventSummary(event.type, event.payload)),
  );
  const label = labelOf(event);
  toggle.addEventListener('click', () => {
    const open = toggle.getAttribute('aria-expanded') !== 'true';
    toggle.setAttribute('aria-expanded', String(open));
    detail.hidden = !open;
    if (open && !detail.firstChild) {
      fill(
        detail,
        label ? h('p', {}, 'Checkpoint label: ', h('strong', { class: 'label' }, label)) : null,
        h('h4', {}, 'Payload'),
        jsonTree(event.payload, 2),
        rawJson(event.payload),
        h(
          'dl',
          { class: 'hashes' },
          h('dt', {}, 'hash'),
          h('dd', {}, h('code', {}, event.hash)),
          h('dt', {}, 'prevHash'),
          h('dd', {}, h('code', {}, event.prevHash)),
        ),
      );
      // Where the server signs tree heads: this event's inclusion proof, checked on Trust.
      void ctx.signingKeys().then((keys) => {
        if (keys.length === 0) return;
        detail.append(
          h(
            'p',
            {},
            h(
              'a',
              {
                class: 'inclusion-link',
                href: `#/s/${encodeURIComponent(ctx.streamId)}/trust?seq=${event.seq}`,
              },
              `Check seq ${event.seq} in the signed tree`,
            ),
          ),
        );
      });
    }
  });
  return h(
    'li',
    { class: bad ? 'event bad' : 'event', 'data-seq': event.seq },
    toggle,
    label ? h('span', { class: 'badge' }, `label ${label}`) : null,
    detail,
  );
};

export const badRow = (seq: number): HTMLElement =>
  h(
    'li',
    { class: 'event bad', 'data-seq': seq, role: 'alert' },
    h(
      'div',
      { class: 'event-toggle' },
      h('span', { class: 'seq' }, seq),
      // The time column stays (empty): the row's columns line up with the events above it.
      h('span', { class: 'ts' }, '—'),
      h('span', { class: 'type' }, 'first bad seq'),
      h(
        'span',
        { class: 'sum' },
        `seq ${seq} does not verify (ErrTamperedLedger): reads fail closed from its segment on`,
      ),
    ),
  );
