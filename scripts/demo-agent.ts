import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { HefestoClient } from '../shared/client/client.js';
import { HefestoApiError } from '../shared/client/errors.js';
import { resume } from '../shared/client/harness.js';
import type { DeltaOp, Json } from '../shared/client/types.js';
import { sha256Hex } from '../shared/domain/hashing.js';

/**
 * The demo's example agent: a deterministic fake model, N turns, each turn one model call
 * (recorded as an observation) and one checkpoint appending a message to a growing history.
 * At turn 5 it pays once, through a fake payment provider that keeps its charges in a file
 * (DEMO_PAYMENTS) and dedupes by idempotency key, as a real one would.
 *
 * It talks to the parent over stdout lines: `MODEL_CALL <turn>`, `RESUMED <turn> <epoch>`,
 * `PAUSED <turn> <step>` (at the kill points the parent chose: the parent SIGKILLs it
 * there), `STOPPED <code>` (the stream was drained or taken over), `LATE_WRITE <code>` and
 * `DONE <stateDigest>`.
 *
 * env: HEFESTO_URL, HEFESTO_KEY, DEMO_STREAM, DEMO_TURNS, DEMO_PAUSE_AT ("7:observed,5:paid"),
 *      DEMO_OWNER (hold the stream lease as this owner), DEMO_PAYMENTS (file),
 *      DEMO_LATE_WRITE_AFTER (file: once it exists, a drained worker tries one late write),
 *      DEMO_TURN_DELAY_MS (think time between turns),
 *      DEMO_HOLD_AT / DEMO_HOLD_UNTIL (after observing that turn, wait until that file exists)
 */

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const say = (line: string) => process.stdout.write(`${line}\n`);

/** The fake model: its answer depends only on the turn and the state it sees. */
const fakeModel = (turn: number, state: Readonly<Record<string, Json>>): Json => {
  say(`MODEL_CALL ${turn}`);
  const seen = sha256Hex(JSON.stringify(state)).slice(0, 12);
  return {
    role: 'assistant',
    text: `turn ${turn}: I have read ${seen}`,
    tool: turn % 3 === 0 ? 'search' : null,
  };
};

/** The fake payment provider: one charge per idempotency key, kept in a file. */
const payments = (file: string) => ({
  charge: (key: string, cents: number): Json => {
    appendFileSync(file, `${JSON.stringify({ key, cents })}\n`);
    return { receipt: `receipt-${key.split('/').at(-1)}`, cents };
  },
  find: (key: string): Json | undefined => {
    if (!existsSync(file)) return undefined;
    const line = readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l !== '' && (JSON.parse(l) as { key: string }).key === key);
    return line
      ? {
          receipt: `receipt-${key.split('/').at(-1)}`,
          cents: (JSON.parse(line) as { cents: number }).cents,
        }
      : undefined;
  },
});

const main = async () => {
  const client = new HefestoClient({
    baseUrl: env('HEFESTO_URL'),
    apiKey: env('HEFESTO_KEY'),
    verify: true,
  });
  const stream = env('DEMO_STREAM');
  const turns = Number(process.env.DEMO_TURNS ?? '50');
  const owner = process.env.DEMO_OWNER;
  const turnDelayMs = Number(process.env.DEMO_TURN_DELAY_MS ?? '0');
  const provider = payments(env('DEMO_PAYMENTS'));
  const pauses = new Set((process.env.DEMO_PAUSE_AT ?? '').split(',').filter(Boolean));
  const pauseIfChosen = async (turn: number, step: string) => {
    if (!pauses.has(`${turn}:${step}`)) return;
    say(`PAUSED ${turn} ${step}`);
    await new Promise(() => {}); // wait here for the parent's SIGKILL
  };

  const run = await resume(client, stream, owner ? { lease: { owner, ttlMs: 5000 } } : {});
  say(`RESUMED ${run.turn} ${run.epoch ?? 0}`);
  try {
    while (run.turn <= turns) {
      const turn = run.turn;
      const reply = await run.observe('model', () => fakeModel(turn, run.state));
      await pauseIfChosen(turn, 'observed');
      if (String(turn) === process.env.DEMO_HOLD_AT && process.env.DEMO_HOLD_UNTIL) {
        say(`HOLDING ${turn}`);
        while (!existsSync(process.env.DEMO_HOLD_UNTIL))
          await new Promise((r) => setTimeout(r, 20));
      }
      const ops: DeltaOp[] = [
        {
          op: 'set',
          path: turn === 1 ? '/messages' : '/messages/-',
          value: turn === 1 ? [reply] : reply,
        },
        { op: 'set', path: '/turn', value: turn },
      ];
      if ((reply as { tool: string | null }).tool)
        ops.push({ op: 'set', path: '/lastTool', value: turn });
      if (turn === 5) {
        const receipt = await run.effect(
          `${stream}/pay-order`,
          async (key) => {
            const charged = provider.charge(key, 500);
            await pauseIfChosen(turn, 'paid'); // charged, not yet recorded as complete
            return charged;
          },
          {
            kind: 'payment',
            intent: { cents: 500 },
            leaseMs: 1500,
            reconcile: async (key) => {
              const found = provider.find(key);
              return found === undefined ? { done: false } : { done: true, result: found };
            },
          },
        );
        ops.push({ op: 'set', path: '/receipt', value: receipt });
      }
      await run.checkpoint(ops);
      await pauseIfChosen(turn, 'checkpointed');
      if (turnDelayMs > 0) await new Promise((r) => setTimeout(r, turnDelayMs));
    }
  } catch (err) {
    if (!(err instanceof HefestoApiError) || !['ErrDraining', 'ErrFenced'].includes(err.code))
      throw err;
    say(`STOPPED ${err.code}`);
    const epoch = run.epoch;
    await run.stop();
    const flag = process.env.DEMO_LATE_WRITE_AFTER;
    if (flag) {
      while (!existsSync(flag)) await new Promise((r) => setTimeout(r, 50));
      // A stale worker that did not notice the hand-over tries one more write.
      client.setFence(stream, epoch);
      const late = await client
        .append(stream, [{ type: 'observation', payload: { late: true } }])
        .then(
          () => 'ACCEPTED',
          (e: unknown) => (e instanceof HefestoApiError ? e.code : String(e)),
        );
      say(`LATE_WRITE ${late}`);
    }
    return;
  }
  await run.stop({ release: true });
  say(`DONE ${run.stateDigest}`);
};

main().catch((err: unknown) => {
  process.stderr.write(
    `agent failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}\n`,
  );
  process.exit(1);
});
