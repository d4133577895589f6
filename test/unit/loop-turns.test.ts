import { describe, expect, it } from 'vitest';
import { Pacer } from '../../shared/state/loop-turns.js';

/**
 * Issue 21 item 3: the pacer that spreads long work over turns of the event loop. A fake
 * clock that each step moves on by the time the step "takes" makes every count exact: the
 * assertions count steps per turn, never time.
 */

/** A clock moved by hand, and a setImmediate ticker counting turns of the loop. */
const world = () => {
  let t = 0;
  let ticks = 0;
  let ticking = true;
  const tick = () => {
    ticks++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
    ticks: () => ticks,
    stop: () => {
      ticking = false;
    },
  };
};

/** `n` concurrent tasks of `steps` steps each, every step taking `ms` of the fake clock. */
const runTasks = async (
  pacer: Pacer,
  w: ReturnType<typeof world>,
  n: number,
  steps: number,
  ms: number,
) => {
  const perTurn = new Map<number, number>();
  const task = async () => {
    for (let s = 0; s < steps; s++) {
      for (let turn = pacer.pause(); turn; turn = pacer.pause()) await turn;
      perTurn.set(pacer.turns, (perTurn.get(pacer.turns) ?? 0) + 1);
      w.advance(ms);
    }
  };
  await Promise.all(Array.from({ length: n }, task));
  return perTurn;
};

describe('Pacer', () => {
  describe('pause', () => {
    it('answers undefined while the slice lasts, then makes the step wait for a turn', async () => {
      const w = world();
      const pacer = new Pacer({ sliceMs: 10, now: w.now });
      // The first slice: steps run until 10 ms of the clock are spent.
      expect(pacer.pause()).toBeUndefined();
      w.advance(6);
      expect(pacer.pause()).toBeUndefined();
      w.advance(6);
      const wait = pacer.pause();
      expect(wait).toBeInstanceOf(Promise);
      // Every step that asks now waits for the same turn.
      expect(pacer.pause()).toBe(wait);
      const before = w.ticks();
      await wait;
      expect(pacer.turns).toBe(1);
      // A fresh slice, and the loop went round in between.
      expect(w.ticks()).toBeGreaterThan(before);
      expect(pacer.pause()).toBeUndefined();
      w.stop();
    });

    it('wakes many concurrent waiters on one turn but lets only a slice of them run in it', async () => {
      const w = world();
      const pacer = new Pacer({ sliceMs: 10, now: w.now });
      // 200 concurrent tasks of 5 steps of 4 ms: a 10 ms slice holds 3 steps (0, 4, 8).
      const perTurn = await runTasks(pacer, w, 200, 5, 4);
      w.stop();
      expect([...perTurn.values()].reduce((a, b) => a + b)).toBe(1000);
      expect(Math.max(...perTurn.values())).toBe(3);
      expect(pacer.turns).toBeGreaterThanOrEqual(Math.ceil(1000 / 3) - 1);
    });

    it('runs one step a turn with sliceMs 0, and always the first step of a slice', async () => {
      const w = world();
      const pacer = new Pacer({ sliceMs: 0, now: w.now });
      const perTurn = await runTasks(pacer, w, 10, 10, 0);
      expect(Math.max(...perTurn.values())).toBe(1);
      // A step slower than the whole slice still runs, one a turn.
      const slow = new Pacer({ sliceMs: 10, now: w.now });
      expect(Math.max(...(await runTasks(slow, w, 3, 3, 50)).values())).toBe(1);
      w.stop();
    });
  });

  describe('source', () => {
    it('makes every fetch a step: one a turn, though all are asked for at once', async () => {
      const w = world();
      const pacer = new Pacer({ sliceMs: 0, now: w.now });
      const fetchedAt: number[] = [];
      const source = pacer.source(async (hash) => {
        fetchedAt.push(pacer.turns);
        return new Uint8Array([hash.length]);
      });
      await Promise.all(Array.from({ length: 50 }, (_, i) => source(`h${i}`)));
      w.stop();
      // One fetch a turn, though all 50 were asked for at once.
      expect(new Set(fetchedAt).size).toBe(50);
    });
  });
});
