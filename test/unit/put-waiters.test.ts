import { describe, expect, it } from 'vitest';
import { PutWaiters } from '../../packages/langgraph/src/put-waiters.js';

// HefestoSaver's putWrites waits for its checkpoint's label for as long as the thread's puts
// progress (a queue of puts on a loaded store took longer than a fixed 11 s: the LangGraph
// crash-resume spec failed with "has no checkpoint labelled" at load 13 on 2 cores).
describe('PutWaiters.progressing', () => {
  it('is true while a put of the stream is in flight, however long it takes', () => {
    let now = 0;
    const w = new PutWaiters(() => now);
    expect(w.progressing('s', 10_000)).toBe(false);
    const ended = w.started('s');
    now = 60_000;
    expect(w.progressing('s', 10_000)).toBe(true);
    expect(w.progressing('other', 10_000)).toBe(false);
    ended();
    expect(w.progressing('s', 10_000)).toBe(true); // just landed
    now += 9_999;
    expect(w.progressing('s', 10_000)).toBe(true);
    now += 1;
    expect(w.progressing('s', 10_000)).toBe(false); // quiet for 10 s: give up
  });

  it('counts puts in flight one by one, and an ended call twice only once', () => {
    let now = 0;
    const w = new PutWaiters(() => now);
    const a = w.started('s');
    const b = w.started('s');
    a();
    a();
    now = 50_000;
    expect(w.progressing('s', 10_000)).toBe(true); // b still in flight
    b();
    now = 70_000;
    expect(w.progressing('s', 10_000)).toBe(false);
  });

  it('wakes a waiter when its put lands, before its timeout', async () => {
    const w = new PutWaiters();
    const t0 = Date.now();
    const waiting = w.wait('s#1', 30_000);
    w.landed('s#1');
    await waiting;
    expect(Date.now() - t0).toBeLessThan(30_000);
  });
});
