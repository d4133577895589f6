import type { EventsPage, LedgerEvent } from '../api.js';
import { stream } from '../api.js';
import { fill, h } from '../dom.js';
import { bytes, eventRate, gapsOf, lineChart, millis, perSecond } from '../pictures.js';
import { describeError, type StreamContext } from './context.js';

/**
 * Any stream's charts over seq (its first MAX events): the bytes of each event's payload
 * and the event rate (events per second, by their timestamps).
 */

const MAX = 2000;

export const chartsView = (ctx: StreamContext): HTMLElement => {
  const out = h('div', { class: 'charts' }, 'Reading events…');
  const encoder = new TextEncoder();
  void (async () => {
    const events: LedgerEvent[] = [];
    let from: number | null = 1;
    while (from !== null && events.length < MAX) {
      const page: EventsPage = await ctx.api.get<EventsPage>(stream(ctx.streamId, '/events'), {
        from,
        limit: 500,
      });
      events.push(...page.events);
      from = page.next;
    }
    fill(
      out,
      lineChart(
        {
          points: events.map((e) => [e.seq, encoder.encode(JSON.stringify(e.payload)).length]),
          title: 'Payload size over seq',
          unit: bytes,
        },
        'size-chart',
      ),
      lineChart(
        { points: eventRate(events), title: 'Event rate over seq', unit: perSecond },
        'rate-chart',
      ),
      lineChart(
        { points: gapsOf(events), title: 'Time since the event before', unit: millis },
        'gap-chart',
      ),
      h(
        'p',
        { class: 'muted' },
        `${events.length} event${events.length === 1 ? '' : 's'}${from === null ? '' : ` (the first ${MAX})`}.`,
      ),
    );
  })().catch((err: unknown) => fill(out, h('p', { class: 'error' }, describeError(err))));
  return h('section', { class: 'stream-charts', 'aria-label': 'Charts' }, out);
};
