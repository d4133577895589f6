import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { HefestoClient } from '../packages/client/src/index.js';
import { HefestoSession } from '../packages/openai-agents/src/index.js';
import { LocalObjectStore } from '../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../shared/adapters/local/local-record-store.js';
import { createApp } from '../shared/http/app.js';
import { KeyService } from '../shared/keys/keys.js';
import { Ledger } from '../shared/ledger/ledger.js';

/**
 * `npx tsx bench/openai-session.ts [N]`: what a HefestoSession call costs on the embedded
 * stores (files + SQLite, durable commits), through the HTTP app in process (no socket), next
 * to the floor it is built on: a plain `client.checkpoint` of one set op on a stream of the
 * same length (one conditional append, no history to evaluate). Medians of N calls (default
 * 200) per kind, in ms, and each as a ratio to the floor, from one run.
 */

const N = Number(process.argv[2] ?? 200);
const ROOT = 'bench-root-key-0123456789abcdef';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

const main = async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-session-'));
  const clock = { now: () => Date.now() };
  const objects = new LocalObjectStore({ dir: join(dir, 'objects') });
  const records = new LocalRecordStore({ path: join(dir, 'records.sqlite'), clock });
  const ledger = new Ledger({ objects, records, clock });
  const keys = new KeyService({ records, clock, rootKey: ROOT });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
  const fetch = (async (input: string | URL | Request, init?: RequestInit) =>
    app.request(String(input), init)) as typeof globalThis.fetch;
  const client = new HefestoClient({ baseUrl: 'http://bench.test', apiKey: ROOT, fetch });
  const session = new HefestoSession({ sessionId: 'bench-session', client });
  const item = (i: number) => ({
    type: 'message' as const,
    role: 'user' as const,
    content: `message ${i}: the agent calls a tool then reads its result and plans the next step`,
  });

  const timed: Record<string, number[]> = {};
  const time = async (kind: string, call: () => Promise<unknown>) => {
    const t0 = performance.now();
    await call();
    const list = timed[kind] ?? [];
    list.push(performance.now() - t0);
    timed[kind] = list;
  };

  let digest = (
    await client.checkpoint('bench-floor', {
      ops: [{ op: 'set', path: '/items', value: [] }],
      baseDigest: '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327',
    })
  ).stateDigest;
  for (let i = 0; i < N; i++) {
    await time('checkpoint (floor)', async () => {
      const r = await client.checkpoint('bench-floor', {
        ops: [{ op: 'set', path: `/items/${i}`, value: item(i) }],
        baseDigest: digest,
      });
      digest = r.stateDigest;
    });
    await time('addItems(1)', () => session.addItems([item(i)]));
    await time('getItems(10)', () => session.getItems(10));
  }
  for (let i = 0; i < N; i++) {
    // The floor of a replace_suffix: its very ops (delete the last item, set two) as one
    // plain checkpoint, without the history read and the suffix check.
    await time('checkpoint of replace_suffix ops (floor)', async () => {
      const r = await client.checkpoint('bench-floor', {
        ops: [
          { op: 'delete', path: `/items/${N - 1}` },
          { op: 'set', path: `/items/${N - 1}`, value: item(i) },
          { op: 'set', path: `/items/${N}`, value: item(N + i) },
        ],
        baseDigest: digest,
      });
      digest = r.stateDigest;
    });
    const back = await client.checkpoint('bench-floor', {
      ops: [{ op: 'delete', path: `/items/${N}` }],
      baseDigest: digest,
    });
    digest = back.stateDigest;
    const last = (await session.getItems(1))[0];
    if (!last) break;
    await time('applyHistoryTransaction (replace_suffix 1 -> 2)', () =>
      session.applyHistoryTransaction({
        operationId: `op-${i}`,
        transaction: {
          type: 'replace_suffix',
          expectedSuffix: [last],
          replacement: [last, item(N + i)],
        },
      }),
    );
    await time('popItem', () => session.popItem());
  }
  const floor = median(timed['checkpoint (floor)'] ?? []);
  console.log(`N=${N}, history of ~${N} items, local stores, in-process HTTP app`);
  for (const [kind, xs] of Object.entries(timed)) {
    const m = median(xs);
    console.log(`${kind.padEnd(50)} median ${m.toFixed(3)} ms  ${(m / floor).toFixed(2)}x floor`);
  }
  records.close();
  objects.close();
  rmSync(dir, { recursive: true, force: true });
};

await main();
