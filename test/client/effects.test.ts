import { describe, expect, it } from 'vitest';
import { HefestoClient } from '../../shared/client/client.js';
import { type DurableRun, resume } from '../../shared/client/harness.js';
import type { DeltaOp, Json } from '../../shared/client/types.js';
import { serverForSuite } from '../support/server-suite.js';

/** Exactly-once effects and hot migration with the harness, against the embedded server. */

const ROOT = 'effects-test-root-key-0123456789';

/** An external system (a payment provider) that dedupes by idempotency key and counts calls. */
const paymentProvider = () => {
  const charges = new Map<string, { receipt: string }>();
  let calls = 0;
  return {
    calls: () => calls,
    charge: async (key: string, delayMs = 0) => {
      calls++;
      await new Promise((r) => setTimeout(r, delayMs));
      const receipt = charges.get(key) ?? { receipt: `r-${calls}` };
      charges.set(key, receipt);
      return receipt;
    },
    reconcile: async (key: string) => {
      const found = charges.get(key);
      return found ? { done: true as const, result: found } : { done: false as const };
    },
  };
};

const fakeModel = () => {
  let calls = 0;
  return {
    calls: () => calls,
    call: (turn: number): Json => {
      calls++;
      return { text: `answer ${turn}` };
    },
  };
};

const turnOps = (turn: number, answer: Json): DeltaOp[] => [
  { op: 'set', path: `/t${turn}`, value: answer },
  { op: 'set', path: '/turn', value: turn },
];

/** One turn: observe the model (recorded before use), then checkpoint. */
const observeTurn = (run: DurableRun, model: ReturnType<typeof fakeModel>) =>
  run.observe('model', () => model.call(run.turn));

const runTurns = async (run: DurableRun, model: ReturnType<typeof fakeModel>, last: number) => {
  while (run.turn <= last) {
    const turn = run.turn;
    await run.checkpoint(turnOps(turn, await observeTurn(run, model)));
  }
};

describe('effects and hot migration with the harness against the embedded server', () => {
  const server = serverForSuite('hefesto-effects-', ROOT);
  const newClient = () => new HefestoClient({ baseUrl: server.url, apiKey: ROOT, verify: true });

  const completions = async (client: HefestoClient, stream: string) =>
    (await client.readEvents(stream, { type: 'hefesto.effect.completed', limit: 1000 })).events;

  describe('DurableRun.effect', () => {
    it('runs the external call once when two runs race the same effect', async () => {
      const provider = paymentProvider();
      const [a, b] = await Promise.all([resume(newClient(), 'e1'), resume(newClient(), 'e1')]);
      const pay = (run: DurableRun) =>
        run.effect('pay-order-1', (key) => provider.charge(key, 100), {
          kind: 'payment',
          intent: { cents: 500 },
        });

      const results = await Promise.all([pay(a), pay(b)]);

      expect(provider.calls()).toBe(1);
      expect(results).toEqual([{ receipt: 'r-1' }, { receipt: 'r-1' }]);
      const events = await completions(newClient(), 'e1');
      expect(events.map((e) => e.payload)).toEqual([
        expect.objectContaining({ effectKey: 'pay-order-1', result: { receipt: 'r-1' } }),
      ]);
    });

    it('reconciles an effect whose run died after the external call, without calling again', async () => {
      const provider = paymentProvider();
      const dying = newClient();
      const begun = await dying.beginEffect('e2', 'pay-order-2', {
        kind: 'payment',
        intent: { cents: 500 },
        leaseMs: 1000,
      });
      expect(begun.status).toBe('acquired');
      await provider.charge('pay-order-2'); // ...and the run dies before completing it
      let called = 0;

      const run = await resume(newClient(), 'e2');
      const result = await run.effect(
        'pay-order-2',
        (key) => {
          called++;
          return provider.charge(key);
        },
        { kind: 'payment', intent: { cents: 500 }, leaseMs: 1000, reconcile: provider.reconcile },
      );

      expect(result).toEqual({ receipt: 'r-1' });
      expect(called).toBe(0);
      expect(provider.calls()).toBe(1);
      expect(
        await newClient().beginEffect('e2', 'pay-order-2', {
          kind: 'payment',
          intent: { cents: 500 },
        }),
      ).toMatchObject({ status: 'completed', result: { receipt: 'r-1' } });
      expect(await completions(newClient(), 'e2')).toHaveLength(1);
    });

    it('runs the call when reconcile finds the dead run never made it', async () => {
      const provider = paymentProvider();
      await newClient().beginEffect('e3', 'pay-order-3', {
        kind: 'payment',
        intent: null,
        leaseMs: 1000,
      }); // the run dies before the external call
      const run = await resume(newClient(), 'e3');
      const result = await run.effect('pay-order-3', (key) => provider.charge(key), {
        kind: 'payment',
        leaseMs: 1000,
        reconcile: provider.reconcile,
      });
      expect(result).toEqual({ receipt: 'r-1' });
      expect(provider.calls()).toBe(1);
    });
  });

  describe('hot migration', () => {
    it('hands a run from worker A to worker B mid-turn with no lost or repeated turn', async () => {
      const stream = 'migrate-1';
      const model = fakeModel();
      const clientA = newClient();
      const a = await resume(clientA, stream, { lease: { owner: 'worker-a', ttlMs: 10_000 } });
      expect(a.epoch).toBe(1);
      await runTurns(a, model, 5);
      const answer6 = await observeTurn(a, model); // A is mid-turn 6: its model output recorded

      const ops = newClient();
      const drained = ops.drain(stream, { owner: 'worker-a', epoch: 1, graceMs: 5000 });
      await untilDraining(stream);
      const refused = await a.checkpoint(turnOps(6, answer6)).catch((err: unknown) => err);
      expect(refused).toMatchObject({ code: expect.stringMatching(/^Err(Draining|Fenced)$/) });
      expect(await drained).toMatchObject({ epoch: 1, seq: 11, snapshot: true });

      const clientB = newClient();
      const b = await resume(clientB, stream, { lease: { owner: 'worker-b', ttlMs: 10_000 } });
      expect(b.epoch).toBe(2);
      expect(b.turn).toBe(6);
      await runTurns(b, model, 10);
      expect(model.calls()).toBe(10); // turn 6's recorded output was reused, not asked again

      await expect(
        clientA.append(stream, [{ type: 'observation', payload: 'late' }]),
      ).rejects.toMatchObject({ code: 'ErrFenced' });
      await a.stop();
      await b.stop({ release: true });

      const head = await clientB.getStream(stream);
      expect(head.deltas).toBe(10);
      const turns = (await clientB.readEvents(stream, { type: 'observation', limit: 100 })).events;
      expect(turns.map((e) => (e.payload as { turn: number }).turn)).toEqual(
        Array.from({ length: 10 }, (_, i) => i + 1),
      );
      const reference = await resume(newClient(), `${stream}-reference`);
      await runTurns(reference, fakeModel(), 10);
      const state = await clientB.getState(stream);
      expect(state.stateDigest).toBe(reference.stateDigest);
      expect(state.state).toEqual(reference.state);
    });
  });

  /** Polls the stream's lease until the drain has marked it draining. */
  const untilDraining = async (stream: string) => {
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`${server.url}/v1/streams/${stream}/lease`, {
        headers: { authorization: `Bearer ${ROOT}` },
      });
      if (res.ok && ((await res.json()) as { draining: boolean }).draining) return;
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error('the stream never started draining');
  };
});
