import { ApiError, type EventsPage, type LedgerEvent, stream } from '../api.js';
import { checkDisplayed } from '../chain.js';
import { field, fill, h, shortHash, uid } from '../dom.js';
import { describeError, type StreamContext } from './context.js';
import { badRow, eventRow } from './timeline-rows.js';

/**
 * The ledger as a timeline: a page of PAGE events at a time (never the whole stream), a type
 * filter, a live tail by polling, each event expandable to its payload and hashes. A read
 * that hits a tampered segment fails closed on the server: the timeline shows what reads
 * before it, then the first bad seq as a highlighted row.
 */

export const PAGE = 100;
const TAIL_MS = 2000;

interface Page {
  events: LedgerEvent[];
  next: number | null;
  /** Set when the read stopped at a seq that does not verify. */
  badSeq?: number;
}

const tamperedAt = (err: unknown): number | undefined =>
  err instanceof ApiError &&
  err.code === 'ErrTamperedLedger' &&
  typeof err.problem.firstBadSeq === 'number'
    ? err.problem.firstBadSeq
    : undefined;

/**
 * Reads up to PAGE events from `from`. On ErrTamperedLedger, reads what comes before the
 * first bad seq in smaller pieces (a segment that holds a bad seq is withheld whole).
 */
const readPage = async (
  ctx: StreamContext,
  from: number,
  type: string | undefined,
): Promise<Page> => {
  const get = (at: number, limit: number) =>
    ctx.api.get<EventsPage>(stream(ctx.streamId, '/events'), { from: at, limit, type });
  try {
    return await get(from, PAGE);
  } catch (err) {
    const bad = tamperedAt(err);
    if (bad === undefined) throw err;
    const events: LedgerEvent[] = [];
    let at = from;
    let n = Math.min(PAGE, bad - from);
    while (n > 0 && at < bad) {
      try {
        const page = await get(at, n);
        events.push(...page.events);
        const last = page.events.at(-1);
        if (!last || last.seq >= bad - 1) break;
        at = last.seq + 1;
        n = Math.min(PAGE - events.length, bad - at);
      } catch (inner) {
        if (tamperedAt(inner) === undefined) throw inner;
        n = n === 1 ? 0 : Math.ceil(n / 2);
      }
    }
    return { events: events.filter((e) => e.seq < bad), next: null, badSeq: bad };
  }
};

export const timelineView = (ctx: StreamContext, startAt?: number): HTMLElement => {
  const headSeq = () => ctx.head?.seq ?? 0;
  const lastPageStart = () => Math.max(1, headSeq() - PAGE + 1);
  let from = startAt ? Math.max(1, startAt - Math.floor(PAGE / 2)) : 1;
  let type: string | undefined;
  let page: Page = { events: [], next: null };
  const starts: number[] = [];
  let timer: number | undefined;

  const list = h('ol', { class: 'events', 'aria-label': 'Events', 'aria-live': 'polite' });
  const status = h('p', { class: 'status', role: 'status' });
  const check = h('p', { class: 'check', role: 'status' });
  const typeInput = h('input', {
    type: 'text',
    name: 'type',
    placeholder: 'e.g. observation',
    autocomplete: 'off',
  });
  const goInput = h('input', { type: 'number', name: 'seq', min: 1, inputmode: 'numeric' });
  const tail = h('input', { type: 'checkbox', name: 'tail' });

  const render = () => {
    fill(list, ...page.events.map((e) => eventRow(ctx, e, e.seq === ctx.badSeq)));
    if (page.badSeq !== undefined) list.append(badRow(page.badSeq));
    else if (ctx.badSeq !== undefined && page.events.some((e) => e.seq === ctx.badSeq)) {
      list.querySelector(`[data-seq="${ctx.badSeq}"]`)?.scrollIntoView({ block: 'center' });
    }
    const first = page.events[0]?.seq;
    const last = page.events.at(-1)?.seq;
    status.textContent =
      first === undefined
        ? 'No events here.'
        : `Seq ${first}–${last} of ${headSeq()}${type ? ` (type ${type})` : ''}.`;
    prev.disabled = starts.length === 0 && from <= 1;
    next.disabled = page.next === null;
  };

  const verifyInBrowser = async () => {
    check.className = 'check';
    check.textContent = 'Checking hashes in your browser…';
    const result = await checkDisplayed(ctx.principal.tenant, ctx.streamId, page.events, !type);
    if (result.ok && page.badSeq !== undefined) {
      // The server refused the page from badSeq on: no green line, whatever was checked.
      check.className = 'check bad';
      check.textContent =
        `Seq ${page.badSeq} does not verify (ErrTamperedLedger)` +
        (result.checked > 0 ? `; the ${result.checked} event hashes before it match.` : '.');
    } else if (result.ok && result.checked === 0) {
      check.className = 'check';
      check.textContent = 'No events on this page to check.';
    } else if (result.ok) {
      check.className = 'check ok';
      check.textContent = `Checked in your browser (WebCrypto): ${result.checked} event hashes${type ? '' : ' and their links'} match.`;
    } else {
      check.className = 'check bad';
      check.textContent = `Browser check failed at seq ${result.firstBadSeq}: ${result.reason}.`;
      ctx.onBadSeq(result.firstBadSeq);
      list.querySelector(`[data-seq="${result.firstBadSeq}"]`)?.classList.add('bad');
    }
  };

  const load = async (at: number) => {
    status.textContent = 'Loading…';
    try {
      page = await readPage(ctx, at, type);
      from = at;
      if (page.badSeq !== undefined) ctx.onBadSeq(page.badSeq);
      render();
      await verifyInBrowser();
    } catch (err) {
      status.textContent = `Could not read events: ${describeError(err)}`;
    }
  };

  const poll = async () => {
    if (!root.isConnected) {
      window.clearInterval(timer);
      return;
    }
    const last = page.events.at(-1)?.seq ?? from - 1;
    try {
      const more = await readPage(ctx, last + 1, type);
      if (more.events.length === 0) return;
      page = { ...more, events: [...page.events, ...more.events].slice(-5 * PAGE) };
      if (ctx.head && more.events.at(-1)) {
        ctx.head = { ...ctx.head, seq: Math.max(ctx.head.seq, more.events.at(-1)?.seq ?? 0) };
      }
      render();
      await verifyInBrowser();
      list.lastElementChild?.scrollIntoView({ block: 'end' });
    } catch (err) {
      status.textContent = `Live tail stopped: ${describeError(err)}`;
    }
  };

  tail.addEventListener('change', () => {
    window.clearInterval(timer);
    if (!tail.checked) return;
    timer = window.setInterval(() => void poll(), TAIL_MS);
    void poll();
  });

  const button = (text: string, label: string, onClick: () => void) =>
    h('button', { type: 'button', 'aria-label': label, onclick: onClick }, text);
  const first = button('« First', 'First page', () => {
    starts.length = 0;
    void load(1);
  });
  const prev = button('‹ Previous', 'Previous page', () => {
    const back = starts.pop() ?? Math.max(1, from - PAGE);
    void load(back);
  });
  const next = button('Next ›', 'Next page', () => {
    if (page.next === null) return;
    starts.push(from);
    void load(page.next);
  });
  const lastBtn = button('Last »', 'Last page', () => {
    starts.push(from);
    void load(type ? from : lastPageStart());
  });

  const filter = h(
    'form',
    {
      class: 'toolbar',
      'aria-label': 'Timeline filter',
      onsubmit: (e: Event) => {
        e.preventDefault();
        type = typeInput.value.trim() || undefined;
        starts.length = 0;
        void load(1);
      },
    },
    field('Event type', typeInput, 'Only events of this type; empty for all'),
    h('button', { type: 'submit' }, 'Filter'),
  );
  const jump = h(
    'form',
    {
      class: 'toolbar',
      'aria-label': 'Go to seq',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const seq = Number(goInput.value);
        if (!Number.isInteger(seq) || seq < 1) return;
        starts.push(from);
        void load(seq);
      },
    },
    field('Go to seq', goInput),
    h('button', { type: 'submit' }, 'Go'),
  );
  const tailId = uid('tail');
  tail.id = tailId;

  const root = h(
    'section',
    { class: 'timeline', 'aria-label': 'Timeline' },
    h(
      'div',
      { class: 'controls' },
      filter,
      jump,
      h('div', { class: 'field check-field' }, tail, h('label', { for: tailId }, 'Live tail')),
    ),
    h('nav', { class: 'pager', 'aria-label': 'Timeline pages' }, first, prev, next, lastBtn),
    status,
    check,
    h(
      'div',
      { class: 'event-head', 'aria-hidden': 'true' },
      h('span', {}, 'seq'),
      h('span', {}, 'time'),
      h('span', {}, 'type'),
      h('span', {}, 'summary'),
    ),
    list,
  );
  void load(from);
  return root;
};

export const shortHead = (hash: string | undefined) => (hash ? shortHash(hash) : '—');
