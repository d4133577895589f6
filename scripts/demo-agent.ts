import { HefestoClient } from '../shared/client/client.js';
import { resume } from '../shared/client/harness.js';
import type { DeltaOp, Json } from '../shared/client/types.js';
import { sha256Hex } from '../shared/domain/hashing.js';

/**
 * The demo's example agent: a deterministic fake model, 50 turns, each turn one model call
 * (recorded as an observation) and one checkpoint appending a message to a growing history.
 *
 * It talks to the parent over stdout lines: `MODEL_CALL <turn>`, `RESUMED <turn>`,
 * `PAUSED <turn> <step>` (at the kill points the parent chose: the parent SIGKILLs it there),
 * and `DONE <stateDigest>`.
 *
 * env: HEFESTO_URL, HEFESTO_KEY, DEMO_STREAM, DEMO_TURNS, DEMO_PAUSE_AT ("7:observed,19:checkpointed")
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

const main = async () => {
  const client = new HefestoClient({
    baseUrl: env('HEFESTO_URL'),
    apiKey: env('HEFESTO_KEY'),
    verify: true,
  });
  const stream = env('DEMO_STREAM');
  const turns = Number(process.env.DEMO_TURNS ?? '50');
  const pauses = new Set((process.env.DEMO_PAUSE_AT ?? '').split(',').filter(Boolean));
  const pauseIfChosen = async (turn: number, step: string) => {
    if (!pauses.has(`${turn}:${step}`)) return;
    say(`PAUSED ${turn} ${step}`);
    await new Promise(() => {}); // wait here for the parent's SIGKILL
  };

  const run = await resume(client, stream);
  say(`RESUMED ${run.turn}`);
  while (run.turn <= turns) {
    const turn = run.turn;
    const reply = await run.observe('model', () => fakeModel(turn, run.state));
    await pauseIfChosen(turn, 'observed');
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
    await run.checkpoint(ops);
    await pauseIfChosen(turn, 'checkpointed');
  }
  say(`DONE ${run.stateDigest}`);
};

main().catch((err: unknown) => {
  process.stderr.write(
    `agent failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}\n`,
  );
  process.exit(1);
});
