import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedRows } from '../support/local-rows.js';
import {
  type Browser,
  type ConsoleWorld,
  launchBrowser,
  shot,
  startConsoleWorld,
} from './console-world.js';

/** The console and the docs in headless Chromium against the embedded server. */

describe('console in Chromium', () => {
  let w: ConsoleWorld;
  let b: Browser;
  beforeAll(async () => {
    w = await startConsoleWorld();
    b = await launchBrowser();
    const events = (n: number, from: number) =>
      Array.from({ length: n }, (_, i) => ({ type: 'observation', payload: { turn: from + i } }));
    for (let i = 0; i < 10; i++) {
      await w.request('/v1/streams/run-long/events', {
        key: w.key,
        body: { events: events(100, i * 100) },
      });
    }
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await w?.close();
  });

  const signIn = async (key: string) => {
    const page = await b.page();
    await page.goto(`${w.base}/console`);
    await page.getByLabel('API key').fill(key);
    await page.keyboard.press('Enter');
    return page;
  };

  it('refuses a wrong key, then signs in and lists the streams', async () => {
    const page = await signIn('hk_wrong_key');
    await page.waitForSelector('.sign-in .error:has-text("refused")');
    await shot(page, 'sign-in-refused');
    await page.getByLabel('API key').fill(w.key);
    await page.keyboard.press('Enter');
    await page.waitForSelector('tr[data-stream="run-long"]');
    await shot(page, 'streams');
    expect(page.problems).toEqual([]);
  });

  it('pages through the timeline of a 1,000-event stream and checks it in the browser', async () => {
    const page = await signIn(w.key);
    await page.click('a:has-text("run-long")');
    await page.waitForSelector('.check.ok');
    expect(await page.locator('li.event').count()).toBe(100);
    await page.getByRole('button', { name: 'Last page' }).click();
    await page.waitForSelector('li.event[data-seq="1000"]');
    await page.waitForSelector('.check.ok');
    await shot(page, 'timeline');
    expect(page.problems).toEqual([]);
  });

  it('shows the state at a seq and the diff between two seqs', async () => {
    let digest = '0'.repeat(64);
    const head = (await (
      await w.request('/v1/streams/run-state/events', {
        key: w.key,
        body: { events: [{ type: 'start', payload: {} }] },
      })
    ).json()) as object;
    expect(head).toBeTruthy();
    const state = (await (
      await w.request('/v1/streams/run-state/state', { key: w.key })
    ).json()) as { stateDigest: string };
    digest = state.stateDigest;
    for (const ops of [
      [{ op: 'set', path: '/plan', value: ['a'] }],
      [
        { op: 'set', path: '/plan/1', value: 'b' },
        { op: 'set', path: '/done', value: true },
      ],
    ]) {
      const res = (await (
        await w.request('/v1/streams/run-state/checkpoints', {
          key: w.key,
          body: { ops, baseDigest: digest },
        })
      ).json()) as { stateDigest: string };
      digest = res.stateDigest;
    }
    const page = await signIn(w.key);
    await page.goto(`${w.base}/console#/s/run-state/state`);
    await page.getByLabel('State at seq').fill('2');
    await page.getByRole('button', { name: 'Show state' }).click();
    await page.waitForSelector('.state-meta:has-text("State at seq 2")');
    await page.getByLabel('From seq').fill('2');
    await page.getByLabel('To seq').fill('3');
    await page.getByRole('button', { name: 'Diff', exact: true }).click();
    await page.waitForSelector('table.diff');
    expect(await page.locator('table.diff tbody tr').count()).toBe(2);
    await shot(page, 'state-diff');
    expect(page.problems).toEqual([]);
  });

  it('highlights the first bad seq of a tampered stream in the timeline and on verify', async () => {
    const events = Array.from({ length: 10 }, (_, i) => ({
      type: 'observation',
      payload: { mark: `m-${i}` },
    }));
    for (let i = 0; i < 3; i++)
      await w.request('/v1/streams/run-bad/events', { key: w.key, body: { events } });
    // Segments are rows of objects.sqlite (object layout 3): edit the row, as one with the disk could.
    const rows = storedRows(w.dataDir);
    try {
      const segment = rows.keys('run-bad').find((k) => k.includes('0000000000000011'));
      if (!segment) throw new Error('no segment 11');
      const bytes = Buffer.from(rows.read(segment));
      const at = bytes.indexOf('m-4');
      bytes[at + 2] = 'X'.charCodeAt(0); // seq 15's payload
      rows.write(segment, bytes);
    } finally {
      rows.close();
    }

    const page = await signIn(w.key);
    await page.goto(`${w.base}/console#/s/run-bad`);
    await page.waitForSelector('li.event.bad[data-seq="15"]');
    expect(await page.locator('li.event:not(.bad)').count()).toBe(10);
    await shot(page, 'tampered-timeline');
    await page.goto(`${w.base}/console#/s/run-bad/trust`);
    await page.getByRole('button', { name: 'Verify stream' }).click();
    await page.waitForSelector('.first-bad:has-text("15")');
    await shot(page, 'tampered-verify');
  });

  it('renders every route of the OpenAPI document on /docs with no CSP violation', async () => {
    const doc = (await (await fetch(`${w.base}/v1/openapi.json`)).json()) as {
      paths: Record<string, object>;
    };
    const operations = Object.values(doc.paths).reduce(
      (n, item) => n + Object.keys(item).length,
      0,
    );
    const page = await b.page();
    await page.goto(`${w.base}/docs`);
    await page.waitForSelector('.opblock');
    expect(await page.locator('.opblock').count()).toBe(operations);
    await page.locator('.opblock-summary').first().click();
    await shot(page, 'docs');
    expect(page.problems).toEqual([]);
  });
});
