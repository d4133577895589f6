import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Browser,
  type ConsoleWorld,
  launchBrowser,
  shot,
  startConsoleWorld,
} from './console-world.js';

/**
 * The trust view against the server's real proof routes (docs/proofs.md): the embedded
 * server signs with its data directory's key, so GET /v1/signing-keys answers and the view
 * checks the signed tree head, an event's inclusion and an append's receipt in Chromium.
 */

describe('console trust view on a signing server', () => {
  let w: ConsoleWorld;
  let b: Browser;
  const receipts: Array<{ treeHead: Record<string, unknown> }> = [];
  beforeAll(async () => {
    w = await startConsoleWorld();
    b = await launchBrowser();
    for (let i = 0; i < 4; i++) {
      const res = await w.request('/v1/streams/run-signed/events', {
        key: w.key,
        body: { events: Array.from({ length: 3 }, (_, j) => ({ type: 'obs', payload: { i, j } })) },
      });
      receipts.push((await res.json()) as { treeHead: Record<string, unknown> });
    }
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await w?.close();
  });

  const trust = async () => {
    const page = await b.page();
    await page.goto(`${w.base}/console`);
    await page.getByLabel('API key').fill(w.key);
    await page.keyboard.press('Enter');
    await page.waitForSelector('h2:has-text("Streams")');
    await page.goto(`${w.base}/console#/s/run-signed/trust`);
    await page.waitForSelector('.signature');
    return page;
  };

  it('checks the signed head and an event inclusion in the browser', async () => {
    const page = await trust();

    expect(await page.locator('.signature').getAttribute('class')).toContain('ok');
    await page.getByLabel('Event seq').fill('5');
    await page.getByRole('button', { name: 'Check inclusion' }).click();
    const inclusion = await page.waitForSelector('.inclusion');
    expect(await inclusion.textContent()).toContain('Seq 5 is in the signed tree of 12 leaves');
    expect(page.problems).toEqual([]);
  });

  it("verifies an append's receipt, and refuses an edited one and another stream's", async () => {
    const page = await trust();
    const check = async (receipt: unknown) => {
      await page.getByLabel('Receipt (JSON)').fill(JSON.stringify(receipt));
      await page.getByRole('button', { name: 'Check receipt' }).click();
      return (await page.waitForSelector('.receipt-result')).textContent();
    };

    expect(await check(receipts[1])).toBe('Receipt verified.');
    expect(await page.locator('ul.checks li.ok').count()).toBe(5);
    await shot(page, 'trust-receipt');
    const head = receipts[1]?.treeHead ?? {};
    expect(await check({ ...head, rootHash: '0'.repeat(64) })).toBe('Receipt refused.');
    expect(await page.locator('ul.checks li.bad').textContent()).toContain('Not signed');
    expect(await check({ ...head, streamId: 'run-other' })).toBe('Receipt refused.');
    expect(await page.locator('ul.checks li.bad').textContent()).toContain('not this one');
    expect(page.problems).toEqual([]);
  });

  it('links a timeline event to its inclusion check, which runs at once', async () => {
    const page = await trust();
    await page.goto(`${w.base}/console#/s/run-signed`);
    await page.getByRole('button', { name: /^Event 7,/ }).click();
    await page.click('a.inclusion-link');

    const inclusion = await page.waitForSelector('.inclusion');
    expect(await inclusion.textContent()).toContain('Seq 7 is in the signed tree');
    expect(page.problems).toEqual([]);
  });
});
