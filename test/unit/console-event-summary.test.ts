import { describe, expect, it } from 'vitest';
import { eventSummary } from '../../console/src/event-summary.js';

/** The console timeline's one-line summary of an event (console/src/event-summary.ts). */
describe('eventSummary', () => {
  it('summarizes a checkpoint by its first op and how many follow, not by its digests', () => {
    const payload = {
      baseDigest: '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327',
      ops: [
        { op: 'set', path: '/messages/-', value: 'hi there, how can I help you today?' },
        { op: 'delete', path: '/x' },
        { op: 'set', path: '/n', value: 1 },
      ],
      stateDigest: '52b55df1d0ab151844b3eef4630d0ceceb8de6188259fc8ce685267c1dc66ad0',
    };

    expect(eventSummary('hefesto.delta', payload)).toBe(
      'set /messages/- "hi there, how can I he… (+2 ops)',
    );
    expect(eventSummary('hefesto.delta', { ops: [{ op: 'delete', path: '/x' }] })).toBe(
      'delete /x',
    );
  });

  it('shows a LangGraph checkpoint by its first channel op, its step and its label', () => {
    const payload = {
      label: '1f1ee73c-5c3a-68a0-8000-e58f4f3b7ea9',
      meta: { source: 'loop', step: 0, parents: {} },
      ops: [
        { op: 'set', path: '/ckpt/id', value: '1f1ee73c-5c3a-68a0-8000-e58f4f3b7ea9' },
        { op: 'set', path: '/ckpt/ts', value: '2026-12-02T17:14:03.178Z' },
        { op: 'set', path: '/values/approved', value: { j: true } },
      ],
    };

    expect(eventSummary('hefesto.delta', payload)).toBe(
      'set /values/approved {"j":true} (+2 ops) · step 0 · label 1f1ee73c-5c3a-68a0-8000-e58f4f3b7ea9',
    );
  });

  it('names an effect’s key, kind and outcome, a fork’s source, a migration’s versions', () => {
    expect(
      eventSummary('hefesto.effect.completed', {
        effectKey: 'pay-1',
        kind: 'pay',
        sagaId: 'order-1',
        result: { paid: 5 },
      }),
    ).toBe('pay-1 (pay) completed → {"paid":5} · saga order-1');
    expect(
      eventSummary('hefesto.effect.failed', {
        effectKey: 'ship-1',
        kind: 'ship',
        sagaId: null,
        error: 'no stock',
      }),
    ).toBe('ship-1 (ship) failed: "no stock"');
    expect(eventSummary('hefesto.fork', { source: { streamId: 'run-a', seq: 4, hash: 'x' } })).toBe(
      'fork of run-a at seq 4',
    );
    expect(
      eventSummary('hefesto.migration', { from: 1, to: 2, ops: [{ op: 'delete', path: '/old' }] }),
    ).toBe('schema 1 → 2: delete /old');
    expect(eventSummary('hefesto.writes', { label: 'c-1' })).toBe('pending writes of c-1 bound');
  });

  it('summarizes history changes, leases and drains, and other events as JSON', () => {
    expect(
      eventSummary('hefesto.history.change', { change: { type: 'append_items', items: [1, 2] } }),
    ).toBe('appended 2 items');
    expect(eventSummary('hefesto.history.change', { type: 'pop' })).toBe('popped the last item');
    expect(eventSummary('worker.lease', { owner: 'w-a', epoch: 3 })).toBe('lease w-a · epoch 3');
    expect(eventSummary('worker.drain', { owner: 'w-a', epoch: 3, draining: true })).toBe(
      'drain w-a · epoch 3 · draining',
    );
    expect(eventSummary('observation', { model: 'said hi' })).toBe('{"model":"said hi"}');
  });

  it('cuts a long line', () => {
    const line = eventSummary('observation', { text: 'x'.repeat(300) });

    expect(line).toHaveLength(120);
    expect(line.endsWith('…')).toBe(true);
  });

  it('survives a delta payload it does not expect', () => {
    expect(eventSummary('hefesto.delta', { ops: [] })).toBe('no ops');
    expect(eventSummary('hefesto.delta', { ops: [null, { op: 'set', path: '' }] })).toBe(
      'undefined (root) (+1 op)',
    );
    expect(eventSummary('hefesto.delta', null)).toBe('null');
  });
});
