import { join } from 'node:path';
import { Command } from '@langchain/langgraph';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoSaver, pendingResume } from '../../packages/langgraph/src/index.js';
import { HefestoSession } from '../../packages/openai-agents/src/hefesto-session.js';
import { REFUND_QUESTION, refundGraph, refundInput } from '../support/refund-graph.js';
import {
  ARTIFACTS,
  type Browser,
  type ConsoleWorld,
  launchBrowser,
  startConsoleWorld,
} from './console-world.js';

/** A screenshot of the whole page (artifacts/console/, git-ignored; two are in the README). */
const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

/**
 * The console's agent views in headless Chromium against the embedded server, with a real
 * LangGraph graph (HefestoSaver) that interrupts, an OpenAI Agents session (HefestoSession)
 * and a plain stream: the run list, a run's steps, transcript, channel diff, path picture and
 * charts; a fork made in the console that a new HefestoSaver resumes; a resume recorded in
 * the console that a worker picks up; readable timelines; keyboard use at 420 px; and no CSP
 * or Trusted Types violation on any page.
 */

describe('console runs in Chromium', () => {
  let w: ConsoleWorld;
  let b: Browser;
  const cfg = (thread_id: string) => ({ configurable: { thread_id } });
  const saver = () => new HefestoSaver({ baseUrl: w.base, apiKey: w.key });
  beforeAll(async () => {
    w = await startConsoleWorld();
    b = await launchBrowser();
    const graph = refundGraph(saver());
    await graph.invoke(refundInput(), cfg('refund-1')); // interrupted at approve
    await graph.invoke(refundInput(), cfg('refund-2'));
    await graph.invoke(new Command({ resume: 'yes' }), cfg('refund-2')); // done
    const session = new HefestoSession({
      sessionId: 'support-chat',
      baseUrl: w.base,
      apiKey: w.key,
    });
    await session.addItems([
      { role: 'user', content: 'Where is my parcel?' },
      {
        type: 'function_call',
        callId: 'call-9',
        name: 'track',
        arguments: '{"parcel":"P-1"}',
        status: 'completed',
      },
    ] as never);
    await session.addItems([
      {
        type: 'function_call_result',
        callId: 'call-9',
        name: 'track',
        status: 'completed',
        output: { type: 'text', text: 'in Lyon' },
      },
      {
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'It is in Lyon.' }],
      },
    ] as never);
    const res = await w.request('/v1/streams/plain-1/events', {
      key: w.key,
      body: {
        events: [
          { type: 'observation', payload: { note: 'file \u202Etxt.exe' } },
          { type: 'tool_result', payload: { tool: 'search', hits: 3 } },
        ],
      },
    });
    expect(res.status).toBe(201);
    const { stateDigest } = (await (
      await w.request('/v1/streams/plain-1/state', { key: w.key })
    ).json()) as { stateDigest: string };
    const cp = await w.request('/v1/streams/plain-1/checkpoints', {
      key: w.key,
      body: {
        ops: [
          { op: 'set', path: '/plan', value: ['search the web for the answer', 'reply'] },
          { op: 'set', path: '/turn', value: 1 },
        ],
        baseDigest: stateDigest,
      },
    });
    expect(cp.status).toBe(201);
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

  it('lists LangGraph threads and OpenAI Agents sessions as runs with their status', async () => {
    const page = await signIn('#/runs');
    await page.waitForSelector('tr.run[data-run="support-chat"]');
    const rows = await page
      .locator('tr.run')
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll('th, td')].slice(0, 5).map((c) => c.textContent)),
      );
    expect(rows).toEqual([
      ['refund-1', 'LangGraph', '(root)', 'step 1 → approve', 'interrupted'],
      ['refund-2', 'LangGraph', '(root)', 'step 4', 'done'],
      ['support-chat', 'OpenAI Agents', '—', '4 items · seq 2', 'done'],
    ]);
    await shot(page, 'runs-list');
    expect(page.problems).toEqual([]);
  });

  it('shows a thread’s steps, interrupt, transcript, channel diff, path and charts', async () => {
    const page = await signIn(`#/r/${encodeURIComponent('lg.refund-1.')}`);
    await page.waitForSelector('table.steps tbody tr');
    const steps = await page
      .locator('table.steps tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) =>
          ['num', 'ran', 'next'].map((c) => tr.querySelector(`td.${c}`)?.textContent),
        ),
      );
    expect(steps).toEqual([
      ['-1', '__input__', '__start__'],
      ['0', '__start__', 'agent'],
      ['1', 'agent', 'approve'],
    ]);
    expect(await page.locator('table.steps tr.interrupted td.interrupts').textContent()).toBe(
      `approve: ${JSON.stringify(REFUND_QUESTION)}`,
    );
    expect(
      await page.locator('table.steps tbody tr').nth(2).locator('td.writes').textContent(),
    ).toContain('messages');
    expect(await page.locator('.run-status').textContent()).toBe('interrupted');

    const chat = await page
      .locator('ol.transcript li')
      .evaluateAll((lis) => lis.map((li) => li.textContent));
    expect(chat).toEqual([
      'userPlease refund order 4711',
      'assistantI can refund that. Asking for approval first.tool call refund({"eur":5,"order":4711}) · call-1',
    ]);

    // The diff between the steps before and after agent ran, in channel terms.
    await page.getByLabel('From step').selectOption({ index: 1 });
    await page.getByLabel('To step').selectOption({ index: 0 });
    await page.getByRole('button', { name: 'Diff channels' }).click();
    const diff = await page
      .locator('.diff-out tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 2).map((td) => td.textContent)),
      );
    expect(diff).toEqual([['add', '/messages/1']]);

    // The path: the nodes in order, the interrupt marked, the node waiting drawn last.
    const boxes = await page
      .locator('svg.path-picture g[data-node]')
      .evaluateAll((gs) => gs.map((g) => [g.getAttribute('data-node'), g.getAttribute('class')]));
    expect(boxes).toEqual([
      ['__input__', 'step-box'],
      ['__start__', 'step-box'],
      ['agent', 'step-box interrupted'],
      ['approve', 'step-box interrupted'],
    ]);
    expect(await page.locator('svg.size-chart circle.dot').count()).toBe(3);
    expect(await page.locator('svg.rate-chart polyline.series').count()).toBe(1);
    expect(await page.locator('svg.gap-chart polyline.series').count()).toBe(1);
    await shot(page, 'run-langgraph');
    expect(page.problems).toEqual([]);
  });

  it('forks a thread from the console, after a confirmation, into one HefestoSaver resumes', {
    timeout: 90_000,
  }, async () => {
    const page = await signIn(`#/r/${encodeURIComponent('lg.refund-1.')}`);
    await page.getByRole('button', { name: 'Fork this run…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Fork this run?' });
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await w.request('/v1/streams/lg.refund-1-fork.', { key: w.key })).status).toBe(404);

    // Into a thread that exists: refused, the dialog stays open with the reason, nothing written.
    const before = await (await w.request('/v1/streams/lg.refund-2.', { key: w.key })).json();
    await page.getByRole('button', { name: 'Fork this run…' }).click();
    await page.getByLabel('New thread id').fill('refund-2');
    await page.getByRole('button', { name: 'Fork run' }).click();
    await dialog.locator('.error:has-text("Not forked")').waitFor();
    expect(await (await w.request('/v1/streams/lg.refund-2.', { key: w.key })).json()).toEqual(
      before,
    );
    await page.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });

    await page.getByRole('button', { name: 'Fork this run…' }).click();
    await page.getByLabel('New thread id').fill('refund-1-retry');
    await shot(page, 'run-fork-confirm');
    // The server copies (POST …/copy-thread, called until done); the browser writes nothing else.
    const writes: string[] = [];
    page.on('request', (r) => {
      if (r.method() !== 'GET') writes.push(new URL(r.url()).pathname);
    });
    await page.getByRole('button', { name: 'Fork run' }).click();
    await page.waitForSelector('h2#run-title:has-text("Thread refund-1-retry")');
    expect(writes.length).toBeGreaterThan(0);
    expect(new Set(writes)).toEqual(new Set(['/v1/streams/lg.refund-1./copy-thread']));
    await page.waitForSelector('svg.path-picture text.fork-origin');

    // A worker with a saver of its own resumes the fork: its interrupt is pending there too.
    const worker = refundGraph(saver());
    const state = await worker.getState(cfg('refund-1-retry'));
    expect(state.next).toEqual(['approve']);
    expect(state.tasks[0]?.interrupts[0]?.value).toEqual(REFUND_QUESTION);
    const out = await worker.invoke(new Command({ resume: 'no' }), cfg('refund-1-retry'));
    expect(out.messages.at(-1)?.content).toBe('No refund made.');
    expect((await worker.getState(cfg('refund-1'))).next).toEqual(['approve']);

    await page.reload();
    await page.waitForSelector('.run-status:has-text("done")');
    expect(await page.locator('svg.path-picture text.fork-origin').textContent()).toContain(
      'forked from refund-1',
    );
    expect(page.problems).toEqual([]);
  });

  it('records a resume value after a confirmation while the worker holds the thread exclusively; the worker picks it up and runs the graph', {
    timeout: 90_000,
  }, async () => {
    // The worker holds the thread's exclusive lease all along (a write without its epoch is
    // ErrFenced): the console's resume is recorded all the same.
    const ws = new HefestoSaver({ baseUrl: w.base, apiKey: w.key, exclusive: true });
    await refundGraph(ws).invoke(refundInput(), cfg('refund-3'));
    const page = await signIn(`#/r/${encodeURIComponent('lg.refund-3.')}`);
    await page.getByRole('button', { name: 'Resume interrupt…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Resume this interrupt?' });
    await dialog.waitFor();
    expect(await dialog.locator('.interrupt-payload').textContent()).toContain('Refund 5 EUR');
    await page.getByLabel('Resume value (JSON)').fill('not json');
    await page.getByRole('button', { name: 'Record resume' }).click();
    await dialog.locator('.error:has-text("must be JSON")').waitFor();
    expect(await pendingResume(ws, 'refund-3')).toBeUndefined();
    await page.getByLabel('Resume value (JSON)').fill('"yes"');
    await page.getByRole('button', { name: 'Record resume' }).click();
    await page.waitForSelector('.resume-asked:has-text("waiting for the worker")');
    expect(await page.locator('.run-status').textContent()).toBe('running');

    // The user's worker: polls, finds the value, resumes the graph with it.
    const asked = await pendingResume(ws, 'refund-3');
    expect(asked?.value).toBe('yes');
    const out = await refundGraph(ws).invoke(
      new Command({ resume: asked?.value }),
      cfg('refund-3'),
    );
    expect(out.messages.at(-1)?.content).toBe('Done: 5 EUR are on their way.');
    expect(await pendingResume(ws, 'refund-3')).toBeUndefined();
    await page.reload();
    await page.waitForSelector('.run-status:has-text("done")');
    expect(await page.locator('.resume-asked').count()).toBe(0);
    await ws.release();
    expect(page.problems).toEqual([]);
  });

  it('shows an OpenAI Agents session as a chat with its changes, items diff and charts', async () => {
    const page = await signIn('#/r/support-chat');
    await page.waitForSelector('ol.transcript li');
    const chat = await page
      .locator('ol.transcript li')
      .evaluateAll((lis) => lis.map((li) => li.textContent));
    expect(chat).toEqual([
      'userWhere is my parcel?',
      'assistanttool call track({"parcel":"P-1"}) · call-9',
      'tool · track · result of call-9in Lyon',
      'assistantIt is in Lyon.',
    ]);
    expect(await page.locator('.run-status').textContent()).toBe('done');
    const changes = await page
      .locator('table.steps tbody tr')
      .evaluateAll((trs) => trs.map((tr) => tr.querySelectorAll('td')[2]?.textContent));
    expect(changes[0]).toMatch(/^set \/items \[\] \(\+3 ops\)/);
    await page.getByRole('button', { name: 'Diff items' }).click();
    const diff = await page
      .locator('.diff-out tbody tr')
      .evaluateAll((trs) => trs.map((tr) => tr.querySelectorAll('td')[1]?.textContent));
    expect(diff).toEqual(['/2', '/3']);
    expect(await page.locator('svg.size-chart circle.dot').count()).toBe(2);
    await shot(page, 'run-openai-session');
    expect(page.problems).toEqual([]);
  });

  it('reads a plain stream’s timeline in words, raw JSON a click away, and charts it', async () => {
    const page = await signIn('#/s/plain-1');
    await page.waitForSelector('li.event[data-seq="3"]');
    const sums = await page.locator('li.event .sum').allTextContents();
    expect(sums).toEqual([
      '{"note":"file ⟨U+202E⟩txt.exe"}',
      '{"hits":3,"tool":"search"}',
      'set /plan ["search the web for th… (+1 op)',
    ]);
    await page.getByRole('button', { name: /^Event 3, hefesto.delta/ }).click();
    await page.locator('li.event[data-seq="3"] details.raw summary').click();
    expect(await page.locator('li.event[data-seq="3"] pre.raw-json').textContent()).toContain(
      '"path": "/plan"',
    );
    await page.getByRole('link', { name: 'Charts' }).click();
    await page.waitForSelector('svg.rate-chart');
    expect(await page.locator('svg.size-chart circle.dot').count()).toBe(3);
    expect(await page.locator('svg.gap-chart').count()).toBe(1);
    await shot(page, 'stream-charts');
    // No link to a run view: this is no agent's stream, and it is not listed as a run.
    expect(await page.locator('a.as-run').count()).toBe(0);
    expect(page.problems).toEqual([]);
  });

  it('is readable at 420 px and usable by keyboard: the run view fits, the fork dialog opens and closes', async () => {
    const page = await signIn(`#/r/${encodeURIComponent('lg.refund-2.')}`);
    await page.setViewportSize({ width: 420, height: 900 });
    await page.waitForSelector('table.steps tbody tr');
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth');
    expect(overflow).toBeLessThanOrEqual(420);
    const unlabelled = await page.evaluate<string[]>(`
      [...document.querySelectorAll('input, button, select, textarea, a[href]')]
        .filter((el) => !(el.labels?.length || el.getAttribute('aria-label') || el.textContent.trim()))
        .map((el) => el.outerHTML)`);
    expect(unlabelled).toEqual([]);
    await page.getByRole('button', { name: 'Fork this run…' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: 'Fork this run?' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog', { name: 'Fork this run?' }).waitFor({ state: 'hidden' });
    await page.getByLabel('From step').focus();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate<string>('document.activeElement.textContent')).toBe('Diff channels');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.diff-out table.diff');
    await shot(page, 'run-narrow');
    expect(page.problems).toEqual([]);
  });

  it('lists and opens a session whose clear pruned its first events', async () => {
    const session = new HefestoSession({
      sessionId: 'cleared-chat',
      baseUrl: w.base,
      apiKey: w.key,
    });
    await session.addItems([{ role: 'user', content: 'forget this' }] as never);
    await session.clearSession();
    await session.addItems([{ role: 'user', content: 'after the clear' }] as never);
    const gone = await w.request('/v1/streams/cleared-chat/events?from=1&limit=1', { key: w.key });
    expect(gone.status).toBe(410); // the first events are gone: reads from seq 1 fail
    const page = await signIn('#/runs');
    await page.waitForSelector('tr.run[data-run="cleared-chat"]');
    const row = await page
      .locator('tr.run[data-run="cleared-chat"]')
      .evaluate((tr) => [...tr.querySelectorAll('th, td')].slice(0, 2).map((c) => c.textContent));
    expect(row).toEqual(['cleared-chat', 'OpenAI Agents']);
    await page.goto(`${w.base}/console#/r/cleared-chat`);
    await page.waitForSelector('ol.transcript li');
    const chat = await page
      .locator('ol.transcript li')
      .evaluateAll((lis) => lis.map((li) => li.textContent));
    expect(chat).toEqual(['userafter the clear']);
    expect(page.problems).toEqual([]);
  });

  it('draws the whole graph of a thread whose saver recorded its shape, the nodes not visited too', {
    timeout: 90_000,
  }, async () => {
    const recording = saver();
    const graph = refundGraph(recording);
    recording.recordGraph(graph);
    await graph.invoke(refundInput(), cfg('refund-graph')); // interrupted at approve
    const page = await signIn(`#/r/${encodeURIComponent('lg.refund-graph.')}`);
    await page.waitForSelector('svg.graph-picture');
    const nodes = await page
      .locator('svg.graph-picture g.graph-node')
      .evaluateAll((gs) => gs.map((g) => [g.getAttribute('data-node'), g.getAttribute('class')]));
    expect(nodes).toEqual([
      ['__start__', 'graph-node taken'],
      ['agent', 'graph-node taken'],
      ['approve', 'graph-node untaken next interrupted'],
      ['refund', 'graph-node untaken'],
      ['reply', 'graph-node untaken'],
      ['__end__', 'graph-node untaken'],
    ]);
    const taken = await page
      .locator('svg.graph-picture path.edge.taken')
      .evaluateAll((ps) => ps.map((p) => p.getAttribute('data-edge')));
    expect(taken).toEqual(['__start__→agent']);
    expect(await page.locator('svg.graph-picture path.edge').count()).toBe(5);
    // A thread without the shape keeps the path picture.
    await shot(page, 'run-graph');
    await page.goto(`${w.base}/console#/r/${encodeURIComponent('lg.refund-2.')}`);
    await page.waitForSelector('svg.path-picture g.step-box');
    expect(await page.locator('svg.graph-picture').count()).toBe(0);
    expect(page.problems).toEqual([]);
  });
});
