import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedRows } from '../support/local-rows.js';
import {
  type Browser,
  type ConsoleWorld,
  launchBrowser,
  shot,
  startConsoleWorld,
} from './console-world.js';

/**
 * Issue 22, item 9, in Chromium: on a tampered stream the timeline's columns stay under
 * their headings and no success-coloured "hashes match" line shows; checkpoint rows say their
 * ops; every view writes times in one format.
 */

describe('console polish in Chromium', () => {
  let w: ConsoleWorld;
  let b: Browser;

  const post = async <T>(path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${w.base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${w.key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  /** Three batches of ten events: segments 1-10, 11-20 and 21-30. */
  const thirtyEvents = async (stream: string) => {
    for (let i = 0; i < 3; i++)
      await post(`/v1/streams/${stream}/events`, {
        events: Array.from({ length: 10 }, (_, j) => ({
          type: 'observation',
          payload: { mark: `m-${i * 10 + j + 1}` },
        })),
      });
  };
  /** Edits the payload of `seq` in the stored segment whose first seq is `first`. */
  const tamper = (stream: string, first: number, seq: number) => {
    const rows = storedRows(w.dataDir);
    try {
      const key = rows
        .keys(stream)
        .find((k) => k.endsWith(`/s/${stream}/seg/${String(first).padStart(16, '0')}`));
      if (!key) throw new Error(`no segment ${first} of ${stream}`);
      const bytes = Buffer.from(rows.read(key));
      const at = bytes.indexOf(`"m-${seq}"`);
      if (at < 0) throw new Error(`m-${seq} is not in ${key}`);
      bytes[at + 1] = 'X'.charCodeAt(0);
      rows.write(key, bytes);
    } finally {
      rows.close();
    }
  };

  beforeAll(async () => {
    w = await startConsoleWorld();
    b = await launchBrowser();
    await thirtyEvents('run-mid');
    tamper('run-mid', 11, 15);
    await thirtyEvents('run-first');
    tamper('run-first', 1, 1);
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await w?.close();
  });

  const signIn = async (hash: string) => {
    const page = await b.page();
    await page.goto(`${w.base}/console`);
    await page.getByLabel('API key').fill(w.key);
    await page.keyboard.press('Enter');
    await page.waitForSelector('h2:has-text("Streams")');
    await page.goto(`${w.base}/console${hash}`);
    return page;
  };

  /** The browser check's line once it has settled (no longer "Checking…"). */
  const checkLine = async (page: Page) => {
    await page.waitForFunction(
      `(() => { const c = document.querySelector('.check');
        return c && c.textContent !== '' && !c.textContent.startsWith('Checking'); })()`,
    );
    return page.evaluate<{ className: string; text: string; color: string }>(`(() => {
      const el = document.querySelector('.check');
      return { className: el.className, text: el.textContent, color: getComputedStyle(el).color };
    })()`);
  };
  /** The colour the stylesheet gives success lines (.check.ok). */
  const okColor = (page: Page) =>
    page.evaluate<string>(`(() => {
      const probe = document.createElement('p');
      probe.className = 'check ok';
      document.body.append(probe);
      const color = getComputedStyle(probe).color;
      probe.remove();
      return color;
    })()`);

  for (const [stream, bad, shown] of [
    ['run-mid', 15, 10],
    ['run-first', 1, 0],
  ] as const) {
    it(`shows a tampered page (${shown} events before bad seq ${bad}) as a failure, never in green`, async () => {
      const page = await signIn(`#/s/${stream}`);
      await page.waitForSelector(`li.event.bad[data-seq="${bad}"]`);
      const check = await checkLine(page);

      expect(await page.locator('li.event:not(.bad)').count()).toBe(shown);
      expect(check.className.split(' ')).toContain('bad');
      expect(check.className.split(' ')).not.toContain('ok');
      expect(check.color).not.toBe(await okColor(page));
      expect(check.text).not.toMatch(/hashes( and their links)? match\.$/);
      expect(check.text).toContain(`Seq ${bad} does not verify`);
      await shot(page, `polish-tampered-${stream}`);
      expect(page.problems).toEqual([]);
    });
  }

  it("keeps the bad row's columns under the headings, like every event row", async () => {
    const page = await signIn('#/s/run-mid');
    await page.waitForSelector('li.event.bad[data-seq="15"]');
    // The left edge of each heading and of each cell of each row, in the page.
    const layout = await page.evaluate<{ head: number[]; rows: Record<string, number[]> }>(`(() => {
      const lefts = (row) => [...row.children].map((c) => Math.round(c.getBoundingClientRect().left));
      const rows = {};
      for (const li of document.querySelectorAll('li.event'))
        rows[li.dataset.seq] = lefts(li.querySelector('.event-toggle'));
      return { head: lefts(document.querySelector('.event-head')), rows };
    })()`);

    expect(layout.head).toHaveLength(4);
    expect(Object.keys(layout.rows)).toHaveLength(11);
    // Within 2 px (the list's 1 px border): a column moved is 12rem off.
    const off = Object.entries(layout.rows).filter(
      ([, cells]) =>
        cells.length !== layout.head.length ||
        cells.some((x, i) => Math.abs(x - (layout.head[i] ?? Number.NaN)) > 2),
    );
    expect({ head: layout.head, off }).toEqual({ head: layout.head, off: [] });
    const bad = page.locator('li.event.bad .event-toggle');
    expect(await bad.locator('.type').textContent()).toBe('first bad seq');
    expect(page.problems).toEqual([]);
  });

  it('summarizes a checkpoint row by its ops, not by the start of its JSON', async () => {
    await post('/v1/streams/run-ops/events', { events: [{ type: 'start', payload: {} }] });
    let { stateDigest } = (await (
      await w.request('/v1/streams/run-ops/state', { key: w.key })
    ).json()) as { stateDigest: string };
    for (const ops of [
      [{ op: 'set', path: '/messages', value: ['hi'] }],
      [
        { op: 'set', path: '/messages/1', value: 'there' },
        { op: 'delete', path: '/messages/0' },
      ],
      [
        { op: 'set', path: '/done', value: true },
        { op: 'delete', path: '/messages' },
      ],
    ]) {
      ({ stateDigest } = await post<{ stateDigest: string }>('/v1/streams/run-ops/checkpoints', {
        ops,
        baseDigest: stateDigest,
      }));
    }
    const page = await signIn('#/s/run-ops');
    await page.waitForSelector('li.event[data-seq="4"]');
    const rows = await page
      .locator('li.event .event-toggle')
      .evaluateAll((toggles) =>
        toggles.map((t) => [
          t.querySelector('.type')?.textContent,
          t.querySelector('.sum')?.textContent,
        ]),
      );

    expect(rows).toEqual([
      ['start', '{}'],
      ['hefesto.delta', 'set /messages ["hi"]'],
      ['hefesto.delta', 'set /messages/1 "there" (+1 op)'],
      ['hefesto.delta', 'set /done true (+1 op)'],
    ]);
    expect(page.problems).toEqual([]);
  });

  it('writes every time in one format, in every view', async () => {
    await post('/v1/streams/run-times/events', { events: [{ type: 'start', payload: {} }] });
    const lease = await post<{ epoch: number }>('/v1/streams/run-times/lease', {
      owner: 'worker-a',
      ttlMs: 60_000,
    });
    const fence = { 'hefesto-fencing-token': String(lease.epoch) };
    const { holder } = await post<{ holder: string }>(
      '/v1/streams/run-times/effects/pay-1/begin',
      { kind: 'pay', intent: { eur: 5 } },
      fence,
    );
    await post(
      '/v1/streams/run-times/effects/pay-1/complete',
      { holder, result: { paid: 5 } },
      fence,
    );

    // Each view, and what shows it has loaded its times.
    const views = [
      ['', 'tr[data-stream="run-times"] time'],
      ['#/s/run-times', 'li.event time'],
      ['#/s/run-times/effects', '.lease dl time'],
      ['#/s/run-times/trust', '.signature'],
    ] as const;
    const page = await signIn('');
    const seen: Array<{ view: string; text: string }> = [];
    for (const [hash, ready] of views) {
      await page.goto(`${w.base}/console${hash}`);
      await page.waitForSelector(ready);
      await page.waitForSelector('.facts dd time, tr[data-stream] time');
      // Every <time>'s text, and any ISO 8601 or epoch-millisecond time written as plain text.
      const texts = await page.evaluate<string[]>(`(() => [
        ...[...document.querySelectorAll('time')].map((t) => t.textContent),
        ...(document.body.innerText.match(/\\b\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}[^\\s]*|\\b1\\d{12}\\b/g) ?? []),
      ])()`);
      seen.push(...texts.map((text) => ({ view: hash || '#/streams', text })));
    }
    // A format is what is left of a time with its digits and letters masked.
    const formatOf = (text: string) => text.replace(/\d+/g, '9').replace(/[A-Za-z]+/g, 'a');
    const formats = [...new Set(seen.map((s) => formatOf(s.text)))];

    expect(new Set(seen.map((s) => s.view)).size).toBe(views.length);
    expect(seen.length).toBeGreaterThanOrEqual(8);
    // The one format: the browser's locale's date and time (Date's toLocaleString).
    const local = formatOf(await page.evaluate<string>('new Date().toLocaleString()'));
    expect({ formats, seen: formats.length === 1 ? [] : seen }).toEqual({
      formats: [local],
      seen: [],
    });
    await shot(page, 'polish-times-trust');
    expect(page.problems).toEqual([]);
  });
});
