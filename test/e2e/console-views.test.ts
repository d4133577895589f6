import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Browser,
  type ConsoleWorld,
  launchBrowser,
  shot,
  startConsoleWorld,
} from './console-world.js';

/**
 * The console's stream views in headless Chromium against the embedded server: effects and
 * the lease, the live tail, a fork after its confirmation, the checkpoint label in the state
 * view, and keyboard use on a narrow window.
 */

const EMPTY = '0'.repeat(64);

describe('console views in Chromium', () => {
  let w: ConsoleWorld;
  let b: Browser;
  beforeAll(async () => {
    w = await startConsoleWorld();
    b = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await w?.close();
  });

  const post = async <T>(path: string, body: unknown): Promise<T> => {
    const res = await w.request(path, { key: w.key, body });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (res.status === 204 ? undefined : await res.json()) as T;
  };
  const append = (stream: string, n: number, type = 'observation') =>
    post(`/v1/streams/${stream}/events`, {
      events: Array.from({ length: n }, (_, i) => ({ type, payload: { i } })),
    });
  const checkpoint = async (stream: string, ops: object[], label?: string) => {
    const { stateDigest } = (await (
      await w.request(`/v1/streams/${stream}/state`, { key: w.key })
    ).json()) as { stateDigest: string };
    return post<{ seq: number }>(`/v1/streams/${stream}/checkpoints`, {
      ops,
      baseDigest: stateDigest ?? EMPTY,
      ...(label ? { label } : {}),
    });
  };
  const signIn = async (hash = '') => {
    const page = await b.page();
    await page.goto(`${w.base}/console`);
    await page.getByLabel('API key').fill(w.key);
    await page.keyboard.press('Enter');
    await page.waitForSelector('h2:has-text("Streams")');
    if (hash) await page.goto(`${w.base}/console${hash}`);
    return page;
  };

  it('shows each effect with its status and saga, and the lease holder, epoch and draining', async () => {
    await append('run-fx', 1);
    const lease = await post<{ epoch: number }>('/v1/streams/run-fx/lease', {
      owner: 'worker-a',
      ttlMs: 60_000,
    });
    const fence = { 'hefesto-fencing-token': String(lease.epoch) };
    const effect = async (key: string, body: object, finish?: 'complete' | 'fail') => {
      const res = await fetch(`${w.base}/v1/streams/run-fx/effects/${key}/begin`, {
        method: 'POST',
        headers: { authorization: `Bearer ${w.key}`, 'content-type': 'application/json', ...fence },
        body: JSON.stringify(body),
      });
      const { holder } = (await res.json()) as { holder: string };
      if (!finish) return;
      const done = await fetch(`${w.base}/v1/streams/run-fx/effects/${key}/${finish}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${w.key}`, 'content-type': 'application/json', ...fence },
        body: JSON.stringify(
          finish === 'complete' ? { holder, result: { paid: 5 } } : { holder, error: 'no stock' },
        ),
      });
      expect(done.status).toBeLessThan(300);
    };
    await effect('pay-1', { kind: 'pay', intent: { eur: 5 }, sagaId: 'order-1' }, 'complete');
    await effect('ship-1', { kind: 'ship', intent: {}, sagaId: 'order-1' }, 'fail');
    await effect('mail-1', { kind: 'mail', intent: {}, leaseMs: 1000 });
    await effect('push-1', { kind: 'push', intent: {}, leaseMs: 60_000 });
    await w.markDraining('run-fx', 'worker-a', lease.epoch);
    w.advance(1100); // mail-1's reservation lapses

    const page = await signIn('#/s/run-fx/effects');
    await page.waitForSelector('tr.effect.status-failed');
    const rows = await page
      .locator('tr.effect')
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 4).map((td) => td.textContent)),
      );
    expect(rows).toEqual([
      ['mail-1', 'mail', 'unknown outcome', '—'],
      ['pay-1', 'pay', 'completed', 'order-1'],
      ['push-1', 'push', 'acquired', '—'],
      ['ship-1', 'ship', 'failed', 'order-1'],
    ]);
    const facts = await page
      .locator('.lease dl')
      .evaluate((dl) =>
        Object.fromEntries(
          [...dl.querySelectorAll('dt')].map((dt) => [
            dt.textContent,
            dt.nextElementSibling?.textContent,
          ]),
        ),
      );
    expect(facts).toMatchObject({
      state: 'held, draining',
      holder: 'worker-a',
      epoch: String(lease.epoch),
      draining: 'yes',
    });
    await shot(page, 'effects-lease');
    expect(page.problems).toEqual([]);
  });

  it('shows new events as they are appended while the live tail is on', async () => {
    await append('run-tail', 3);
    const page = await signIn('#/s/run-tail');
    await page.waitForSelector('li.event[data-seq="3"]');
    await page.getByLabel('Live tail').check();
    await append('run-tail', 2, 'tool_result');

    await page.waitForSelector('li.event[data-seq="5"]', { timeout: 10_000 });
    expect(await page.locator('li.event').count()).toBe(5);
    await page.waitForSelector('.check.ok:has-text("5 event hashes")');
    await page.getByLabel('Live tail').uncheck();
    await append('run-tail', 1);
    await page.waitForTimeout(2500); // longer than one polling interval
    expect(await page.locator('li.event').count()).toBe(5);
    expect(page.problems).toEqual([]);
  });

  it('forks from the seq shown only after the confirmation, and Escape cancels', async () => {
    await append('run-src', 1);
    await checkpoint('run-src', [{ op: 'set', path: '/plan', value: ['a'] }]);
    await checkpoint('run-src', [{ op: 'set', path: '/plan/1', value: 'b' }]);
    const page = await signIn('#/s/run-src/state');
    await page.getByLabel('State at seq').fill('2');
    await page.getByRole('button', { name: 'Show state' }).click();
    await page.waitForSelector('.state-meta:has-text("State at seq 2")');

    await page.getByRole('button', { name: 'Fork from seq 2…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Fork this stream?' });
    await dialog.waitFor();
    expect(await page.evaluate<string>('document.activeElement.name')).toBe('newStreamId');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await w.request('/v1/streams/run-src.fork-2', { key: w.key })).status).toBe(404);

    await page.getByRole('button', { name: 'Fork from seq 2…' }).click();
    await page.getByLabel('New stream id').fill('run-forked');
    await shot(page, 'fork-confirm');
    await page.keyboard.press('Enter');
    await page.waitForSelector('h2#stream-title:has-text("run-forked")');

    const forked = (await (
      await w.request('/v1/streams/run-forked/state', { key: w.key })
    ).json()) as { state: unknown };
    expect(forked.state).toEqual({ plan: ['a'] });
    expect(page.problems).toEqual([]);
  });

  it('shows the checkpoint label of the state at a seq, also after the labelled delta', async () => {
    const label = '1ef4f797-8335-6428-8001-8a1503f9b875';
    await append('run-lbl', 1);
    await checkpoint('run-lbl', [{ op: 'set', path: '/n', value: 1 }], label);
    await append('run-lbl', 1); // seq 3: not a delta, the state is still the checkpoint's
    await checkpoint('run-lbl', [{ op: 'set', path: '/n', value: 2 }]); // seq 4: unlabelled
    const page = await signIn('#/s/run-lbl/state');
    const stateAt = async (seq: number) => {
      await page.getByLabel('State at seq').fill(String(seq));
      await page.getByRole('button', { name: 'Show state' }).click();
      return page.waitForSelector(`.state-meta:has-text("State at seq ${seq}")`);
    };

    expect(await (await stateAt(2)).textContent()).toContain(`checkpoint label ${label}`);
    expect(await (await stateAt(3)).textContent()).toContain(
      `checkpoint label ${label} (written at seq 2)`,
    );
    await shot(page, 'state-label');
    expect(await (await stateAt(4)).textContent()).not.toContain('checkpoint label');
    expect(await (await stateAt(1)).textContent()).not.toContain('checkpoint label');
    expect(page.problems).toEqual([]);
  });

  it('is usable by keyboard alone on a narrow window: labelled controls, tab order, Enter', async () => {
    await append('run-kb', 2);
    const page = await b.page();
    await page.setViewportSize({ width: 420, height: 800 });
    await page.goto(`${w.base}/console`);
    // The key field has the focus on arrival; Enter signs in.
    await page.keyboard.type(w.key);
    await page.keyboard.press('Enter');
    await page.waitForSelector('tr[data-stream="run-kb"]');

    // In the page (strings: this file is typed for Node, not the DOM).
    const unlabelled = await page.evaluate<string[]>(`
      [...document.querySelectorAll('input, button, select, a[href]')]
        .filter((el) => !(el.labels?.length || el.getAttribute('aria-label') || el.textContent.trim()))
        .map((el) => el.outerHTML)`);
    expect(unlabelled).toEqual([]);

    // Each view moves the focus to its heading; Tab goes on from there in reading order.
    const focused = () =>
      page.evaluate<string>(`(() => {
        const el = document.activeElement;
        return el.labels?.[0]?.textContent ?? el.getAttribute('aria-label') ?? el.textContent;
      })()`);
    expect(await focused()).toBe('Streams');
    const names: string[] = [];
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Tab');
      names.push(await focused());
    }
    const firstStream = await page.locator('tr[data-stream] a').first().textContent();
    expect(names).toEqual(['Stream id prefix', 'Search', firstStream]);
    // Back past the search form (the heading is not a tab stop) to the header's last control.
    for (let i = 0; i < 3; i++) await page.keyboard.press('Shift+Tab');
    expect(await focused()).toBe('Sign out');

    // Prefix search by Enter, then open the stream from its link with Enter.
    await page.getByLabel('Stream id prefix').focus();
    await page.keyboard.type('run-kb');
    await page.keyboard.press('Enter');
    await page.waitForSelector('p[role="status"]:has-text("1 stream shown")');
    await page.getByRole('link', { name: 'run-kb' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForSelector('li.event[data-seq="2"]');
    // An event opens with Enter and closes with it again.
    await page.getByRole('button', { name: /^Event 1, observation/ }).focus();
    await page.keyboard.press('Enter');
    await page.waitForSelector('li.event[data-seq="1"] .event-detail:not([hidden])');
    const overflow = await page.evaluate<number>(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    );
    expect(overflow).toBeLessThanOrEqual(0);
    await shot(page, 'narrow-timeline');
    await page.keyboard.press('Enter');
    await page.waitForSelector('li.event[data-seq="1"] .event-detail[hidden]', {
      state: 'attached',
    });
    expect(page.problems).toEqual([]);
  });

  it('shows no signed-head or receipt panel when the server publishes no signing keys', async () => {
    await append('run-trust', 2);
    // The embedded server always signs: this page gets the answer of a server without keys
    // (GET /v1/signing-keys is 404 there), the rest from the real server.
    const page = await signIn();
    await page.route(`${w.base}/v1/signing-keys`, (route) =>
      route.fulfill({
        status: 404,
        contentType: 'application/problem+json',
        body: JSON.stringify({ status: 404, code: 'ErrNotFound', detail: 'no signing keys' }),
      }),
    );
    await page.goto(`${w.base}/console#/s/run-trust/trust`);
    await page.getByRole('button', { name: 'Verify stream' }).click();
    await page.waitForSelector('.verify-result.ok');

    expect(await page.locator('.signed').textContent()).toBe('');
    expect(await page.getByRole('button', { name: 'Check receipt' }).count()).toBe(0);
    expect(page.problems).toEqual([]);
  });
});
