import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
