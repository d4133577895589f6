import { beforeAll, describe, expect, it } from 'vitest';
import { HefestoClient } from '../../shared/client/client.js';
import { DivergenceDetectedError } from '../../shared/client/errors.js';
import { type DurableRun, resume } from '../../shared/client/harness.js';
import type { DeltaOp, Json } from '../../shared/client/types.js';
import { serverForSuite } from '../support/server-suite.js';

/** The durable harness against the embedded server over real HTTP. */

const ROOT = 'harness-test-root-key-0123456789';

/** A deterministic fake model that counts its calls. */
const fakeModel = () => {
  let calls = 0;
  return {
    calls: () => calls,
    call: (turn: number, state: Readonly<Record<string, Json>>): Json => {
      calls++;
      return { text: `answer ${turn} after ${Object.keys(state).length} keys` };
    },
  };
};

const turnOps = (turn: number, answer: Json): DeltaOp[] => [
  { op: 'set', path: `/t${turn}`, value: answer },
  { op: 'set', path: '/turn', value: turn },
];

/** Runs turns until `last`, or until `stop` says to stop (a simulated crash point). */
const runTurns = async (
  run: DurableRun,
  model: ReturnType<typeof fakeModel>,
  last: number,
  stop: (turn: number, step: 'observed' | 'checkpointed') => boolean = () => false,
) => {
  while (run.turn <= last) {
    const turn = run.turn;
    const answer = await run.observe('model', () => model.call(turn, run.state));
    if (stop(turn, 'observed')) return;
    await run.checkpoint(turnOps(turn, answer));
    if (stop(turn, 'checkpointed')) return;
  }
};

describe('durable harness against the embedded server', () => {
  const server = serverForSuite('hefesto-harness-', ROOT);
  let client: HefestoClient;

  beforeAll(async () => {
    client = new HefestoClient({ baseUrl: server.url, apiKey: ROOT, verify: true });
  });

  it('starts a new run at turn 1 and resumes a stopped one at turn N+1', async () => {
    const model = fakeModel();
    const first = await resume(client, 'h1');
    expect(first.turn).toBe(1);
    await runTurns(first, model, 3);
    const again = await resume(client, 'h1');
    expect(again.turn).toBe(4);
    expect(again.state).toEqual(first.state);
    expect(again.stateDigest).toBe(first.stateDigest);
    await runTurns(again, model, 5);
    expect(model.calls()).toBe(5);
  });

  it('never calls the model again for an observation recorded before a crash', async () => {
    const model = fakeModel();
    const doomed = await resume(client, 'h2');
    await runTurns(doomed, model, 10, (turn, step) => turn === 3 && step === 'observed');
    // The worker "dies" after recording turn 3's model output, before its checkpoint.
    const next = await resume(client, 'h2');
    expect(next.turn).toBe(3);
    await runTurns(next, model, 6);
    expect(model.calls()).toBe(6);
  });

  it('loses only the call when a worker dies between calling the model and recording', async () => {
    const model = fakeModel();
    const run = await resume(client, 'h3');
    await runTurns(run, model, 2);
    // Turn 3: the model answers, then the process dies before the observation is recorded.
    const crashed = await resume(client, 'h3');
    model.call(3, crashed.state);
    const next = await resume(client, 'h3');
    expect(next.turn).toBe(3);
    await runTurns(next, model, 4);
    expect(model.calls()).toBe(5); // 4 turns, one lost call
  });

  it('resumes at the next turn when a worker dies right after its checkpoint', async () => {
    const model = fakeModel();
    const run = await resume(client, 'h4');
    await runTurns(run, model, 4, (turn, step) => turn === 2 && step === 'checkpointed');
    const next = await resume(client, 'h4');
    expect(next.turn).toBe(3);
    await runTurns(next, model, 4);
    expect(model.calls()).toBe(4);
  });

  it('shows the agent byte-identical state before and after a resume (canonical key order)', async () => {
    const run = await resume(client, 'h8');
    await run.observe('model', () => 'x');
    await run.checkpoint([
      { op: 'set', path: '/zeta', value: { b: 1, a: 2 } },
      { op: 'set', path: '/alpha', value: 1 },
    ]);
    const before = JSON.stringify(run.state);
    const resumed = await resume(client, 'h8');
    expect(JSON.stringify(resumed.state)).toBe(before);
    expect(before).toBe('{"alpha":1,"zeta":{"a":2,"b":1}}');
  });

  it('replays every recorded turn without the model and reaches the same state', async () => {
    const model = fakeModel();
    const original = await resume(client, 'h5');
    await runTurns(original, model, 6);
    const replay = await resume(client, 'h5', { replay: true });
    expect(replay.turn).toBe(1);
    expect(replay.replaying).toBe(true);
    await runTurns(replay, model, 8);
    expect(model.calls()).toBe(8); // 6 originals + 2 new live turns
    expect((await client.getStream('h5')).deltas).toBe(8);
    expect(replay.stateDigest).toBe((await client.getState('h5')).stateDigest);
  });

  it('stops with ErrDivergenceDetected naming the turn when replayed code changes the state', async () => {
    const model = fakeModel();
    await runTurns(await resume(client, 'h6'), model, 4);
    const replay = await resume(client, 'h6', { replay: true });
    let err: unknown;
    try {
      while (replay.turn <= 4) {
        const answer = await replay.observe('model', () => model.call(replay.turn, replay.state));
        const ops = turnOps(replay.turn, answer);
        if (replay.turn === 3) ops.push({ op: 'set', path: '/bug', value: true });
        await replay.checkpoint(ops);
      }
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DivergenceDetectedError);
    expect(err).toMatchObject({ code: 'ErrDivergenceDetected', turn: 3 });
    expect((await client.getStream('h6')).deltas).toBe(4);
  });

  it('applies a turn once when two workers run it identically, and traps one that differs', async () => {
    const model = fakeModel();
    const a = await resume(client, 'h7');
    const b = await resume(client, 'h7');
    const c = await resume(client, 'h7');
    await runTurns(a, model, 1);
    await runTurns(b, model, 1); // same turn, same result: idempotent, nothing written twice
    expect((await client.getStream('h7')).deltas).toBe(1);
    const answer = await c.observe('model', () => model.call(1, c.state));
    const other = [...turnOps(1, answer), { op: 'set', path: '/extra', value: 1 }] as DeltaOp[];
    await expect(c.checkpoint(other)).rejects.toMatchObject({
      code: 'ErrDivergenceDetected',
      turn: 1,
    });
    expect((await client.getStream('h7')).deltas).toBe(1);
  });
});
