import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Browser,
  type ConsoleWorld,
  launchBrowser,
  shot,
  startConsoleWorld,
} from './console-world.js';

/**
 * Bidi control characters in user data are shown as markers in the console, never rendered
 * raw (console/src/bidi.ts): an event payload, an object key and a state value holding
 * U+202E (right-to-left override) and U+2066 (left-to-right isolate), in the timeline's
 * summaries, its expanded JSON and the state view, in headless Chromium.
 */

const RLO = '\u202E';
const LRI = '\u2066';
const RAW = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/;

describe('console shows bidi controls in Chromium', () => {
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

  const post = async (path: string, body: unknown) => {
    const res = await w.request(path, { key: w.key, body });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };

  it('renders U+202E and U+2066 in payloads, keys and state as ⟨U+…⟩ markers', async () => {
    await post('/v1/streams/run-bidi/events', {
      events: [
        { type: 'observation', payload: { file: `invoice${RLO}fdp.exe`, [`k${LRI}ey`]: 1 } },
      ],
    });
    const head = (await (await w.request('/v1/streams/run-bidi/state', { key: w.key })).json()) as {
      stateDigest: string;
    };
    await post('/v1/streams/run-bidi/checkpoints', {
      ops: [{ op: 'set', path: '/note', value: `paid${RLO}dias` }],
      baseDigest: head.stateDigest,
    });
    const page = await b.page();
    await page.goto(`${w.base}/console`);
    await page.getByLabel('API key').fill(w.key);
    await page.keyboard.press('Enter');
    await page.waitForSelector('h2:has-text("Streams")');
    await page.goto(`${w.base}/console#/s/run-bidi`);
    const row = await page.waitForSelector('li.event[data-seq="1"]');
    expect(await row.textContent()).toContain('invoice⟨U+202E⟩fdp.exe');
    await row.click();
    await page.waitForSelector('li.event[data-seq="1"] .json-tree');
    const shown = await page.evaluate<string>('document.body.textContent');
    expect(shown).toContain('k⟨U+2066⟩ey');
    expect(shown).not.toMatch(RAW);
    await shot(page, 'bidi-timeline');

    await page.goto(`${w.base}/console#/s/run-bidi/state`);
    await page.waitForSelector('.state-meta');
    await page.waitForFunction("document.body.textContent.includes('paid')");
    const state = await page.evaluate<string>('document.body.textContent');
    expect(state).toContain('paid⟨U+202E⟩dias');
    expect(state).not.toMatch(RAW);
    expect(page.problems).toEqual([]);
  });
});
