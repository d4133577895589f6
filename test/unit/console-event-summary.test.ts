import { describe, expect, it } from 'vitest';
import { eventSummary } from '../../console/src/event-summary.js';

/** The console timeline's one-line summary of an event (console/src/event-summary.ts). */
describe('eventSummary', () => {
  it('summarizes a checkpoint by its ops, not by the start of its JSON', () => {
    const payload = {
      baseDigest: '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327',
      ops: [
        { op: 'set', path: '/messages', value: ['hi'] },
        { op: 'delete', path: '/x' },
      ],
      stateDigest: '52b55df1d0ab151844b3eef4630d0ceceb8de6188259fc8ce685267c1dc66ad0',
    };

    expect(eventSummary('hefesto.delta', payload)).toBe('set /messages, delete /x');
  });

  it('cuts a long list of ops, and shows other events as JSON', () => {
    const ops = Array.from({ length: 40 }, (_, i) => ({ op: 'set', path: `/turn${i}`, value: i }));

    const line = eventSummary('hefesto.delta', { ops });

    expect(line).toHaveLength(120);
    expect(line.startsWith('set /turn0, set /turn1, ')).toBe(true);
    expect(line.endsWith('…')).toBe(true);
    expect(eventSummary('observation', { model: 'said hi' })).toBe('{"model":"said hi"}');
  });

  it('survives a delta payload it does not expect', () => {
    expect(eventSummary('hefesto.delta', { ops: [] })).toBe('no ops');
    expect(eventSummary('hefesto.delta', { ops: [null, { op: 'set', path: '' }] })).toBe(
      'undefined (root), set (root)',
    );
    expect(eventSummary('hefesto.delta', null)).toBe('null');
  });
});
