import {
  type AgentInputItem,
  MemorySession,
  type SessionHistoryTransactionAwareSession as Subject,
} from '@openai/agents-core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HefestoSession } from '../../packages/openai-agents/src/index.js';
import { allStores } from '../support/stores.js';
import { isModelItem, itemArb } from './items.js';
import { type SessionWorld, startWorld } from './world.js';

/**
 * HefestoSession answers what the SDK's own MemorySession answers: random sequences of
 * session calls (adds of 1–3 items of the SDK's shapes, getItems with random limits, pops,
 * clears, history transactions with operation ids drawn from a small pool, so that ids repeat
 * with the same and with other transactions, suffixes that match or not, and transactions
 * whose reply is lost and which their caller sends again) run on both,
 * and every answer (value or error message) and the final history are compared. On memory,
 * local (files + SQLite) and the AWS emulators.
 */

type Tx =
  | { type: 'append_items'; items: AgentInputItem[] }
  | { type: 'replace_suffix'; expectedSuffix: AgentInputItem[]; replacement: AgentInputItem[] };

type Command =
  | { call: 'add'; items: AgentInputItem[] }
  | { call: 'get'; limit: number | undefined }
  | { call: 'pop' }
  | { call: 'clear' }
  /** `lost`: the reply of its first attempt is lost, and its caller sends it again. */
  | { call: 'append'; op: string; items: AgentInputItem[]; lost: boolean }
  /** The actual suffix of length k (when the history has k items), else a made-up one. */
  | {
      call: 'replace';
      op: string;
      k: number;
      actual: boolean;
      wrong: AgentInputItem[];
      replacement: AgentInputItem[];
      lost: boolean;
    }
  /** Repeats the i-th transaction sent so far (mod their count), exactly. */
  | { call: 'repeat'; i: number };

const items = (min: number, max: number) => fc.array(itemArb, { minLength: min, maxLength: max });
const op = fc.constantFrom('op-a', 'op-b', 'op-c', 'op-d');

const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 3, arbitrary: items(1, 3).map((i) => ({ call: 'add' as const, items: i })) },
  {
    weight: 3,
    arbitrary: fc
      .option(fc.integer({ min: -1, max: 6 }), { nil: undefined })
      .map((limit) => ({ call: 'get' as const, limit })),
  },
  { weight: 2, arbitrary: fc.constant({ call: 'pop' as const }) },
  { weight: 1, arbitrary: fc.constant({ call: 'clear' as const }) },
  {
    weight: 2,
    arbitrary: fc
      .record({ op, items: items(0, 2), lost: fc.boolean() })
      .map((r) => ({ call: 'append' as const, ...r })),
  },
  {
    weight: 3,
    arbitrary: fc
      .record({
        op,
        k: fc.integer({ min: 0, max: 3 }),
        actual: fc.boolean(),
        wrong: items(1, 2),
        replacement: items(0, 2),
        lost: fc.boolean(),
      })
      .map((r) => ({ call: 'replace' as const, ...r })),
  },
  { weight: 2, arbitrary: fc.nat(20).map((i) => ({ call: 'repeat' as const, i })) },
);

/** What a call answered: its value, or its error's message. */
const settle = async (call: () => Promise<unknown>) => {
  try {
    return { value: await call() };
  } catch (err) {
    return { error: (err as Error).message };
  }
};

/**
 * Runs the commands on a session; `sent` are the transactions in the order they were sent.
 * `loseNext` (the session under test) loses the reply of its next request and answers how to
 * disarm it; a transaction marked `lost` is then sent again by its caller, as the SDK's runner
 * does after a crash, and its answer is the retry's.
 */
const runOn = async (
  session: Subject,
  commands: Command[],
  reference: MemorySession,
  loseNext?: () => () => void,
) => {
  const answers: unknown[] = [];
  const sent: Array<{ operationId: string; transaction: Tx }> = [];
  for (const c of commands) {
    let tx: { operationId: string; transaction: Tx } | undefined;
    if (c.call === 'append')
      tx = { operationId: c.op, transaction: { type: 'append_items', items: c.items } };
    if (c.call === 'replace') {
      // The suffix is computed from the reference's history before the call (both sessions
      // hold the same history if they agreed so far; the comparison says when not).
      const history = await reference.getItems();
      const expectedSuffix =
        c.actual && c.k <= history.length ? history.slice(history.length - c.k) : c.wrong;
      tx = {
        operationId: c.op,
        transaction: {
          type: 'replace_suffix',
          expectedSuffix: expectedSuffix.filter(isModelItem),
          replacement: c.replacement,
        },
      };
    }
    if (c.call === 'repeat') tx = sent.length > 0 ? sent[c.i % sent.length] : undefined;
    if (tx) {
      const args = structuredClone(tx);
      sent.push(tx);
      const apply = () => settle(() => Promise.resolve(session.applyHistoryTransaction(args)));
      const lost = (c.call === 'append' || c.call === 'replace') && c.lost && loseNext;
      if (lost) {
        const disarm = loseNext();
        const first = await apply();
        disarm();
        answers.push('error' in first ? await apply() : first);
      } else answers.push(await apply());
    } else if (c.call === 'add')
      answers.push(await settle(() => session.addItems(structuredClone(c.items))));
    else if (c.call === 'get') answers.push(await settle(() => session.getItems(c.limit)));
    else if (c.call === 'pop') answers.push(await settle(() => session.popItem()));
    else if (c.call === 'clear') answers.push(await settle(() => session.clearSession()));
    else answers.push({ value: 'no transaction to repeat' });
  }
  answers.push(await settle(() => session.getItems()));
  return answers;
};

/** JSON's view of an answer: undefined properties left out, as both sessions' items compare. */
const plain = (v: unknown) => JSON.parse(JSON.stringify(v ?? null)) as unknown;

const RUNS: Record<string, number> = { memory: 40, local: 25, aws: 10 };

for (const factory of allStores) {
  describe.skipIf(!factory.enabled)(
    `HefestoSession against MemorySession on ${factory.name}`,
    () => {
      let world: SessionWorld;
      beforeAll(async () => {
        world = await startWorld(factory);
      });
      afterAll(() => world.close());

      it('answers every call of random sequences as MemorySession does', async () => {
        let run = 0;
        await fc.assert(
          fc.asyncProperty(
            fc.array(commandArb, { minLength: 1, maxLength: 25 }),
            async (commands) => {
              run++;
              const reference = new MemorySession({ sessionId: `ref-${run}` });
              const lose = { n: 0 };
              const ours = world.session(
                `diff-${factory.name}-${run}-${Math.random().toString(36).slice(2, 8)}`,
                { lose, retry: { maxAttempts: 1 } },
              );
              const loseNext = () => {
                lose.n = 1;
                return () => {
                  lose.n = 0;
                };
              };
              // The same commands on both; suffixes come from the reference session's own history.
              const expected = await runOn(reference, commands, reference);
              const shadow = new MemorySession();
              const got = await runOn(pairWith(ours, shadow), commands, shadow, loseNext);
              expect(plain(got)).toEqual(plain(expected));
            },
          ),
          { numRuns: RUNS[factory.name] ?? 10, endOnFailure: true },
        );
      }, 300_000);
    },
  );
}

/**
 * `ours`, with every call also applied to `shadow` (a MemorySession that follows it), so the
 * suffixes `runOn` computes for it are computed from the same history as the reference's.
 */
const pairWith = (ours: HefestoSession, shadow: MemorySession): Subject => {
  const both =
    <A extends unknown[], R>(name: keyof MemorySession & keyof HefestoSession) =>
    async (...args: A): Promise<R> => {
      const result = await (ours[name] as (...a: A) => Promise<R>).apply(ours, args);
      await (shadow[name] as (...a: A) => Promise<unknown>).apply(shadow, args).catch(() => {});
      return result;
    };
  return Object.assign(Object.create(ours) as HefestoSession, {
    addItems: both('addItems'),
    popItem: both('popItem'),
    clearSession: both('clearSession'),
    applyHistoryTransaction: both('applyHistoryTransaction'),
    getItems: (limit?: number) => ours.getItems(limit),
  });
};
