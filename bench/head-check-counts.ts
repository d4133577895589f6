import { countingAwsApp } from './aws-counting.js';
import { printTable } from './harness.js';

/**
 * What checking the chain head costs in storage requests (issue 11 items 9-10), counted at the
 * SDK against the emulators: an append (the check is a condition inside its one transaction,
 * no extra request), a stream's first append (one Query: is this a new stream, or one whose
 * head was deleted?), a page of events and the head route (one GetItem more each: the index
 * record at the head's seq; for a page it runs alongside the walk).
 *
 * Run: `bash scripts/with-aws.sh npx tsx bench/head-check-counts.ts`
 */

const ROOT = 'bench-root-key-0123456789abcdef';

const aws = await countingAwsApp(ROOT);
if (!aws) {
  console.log('(skipped: no emulator endpoints; run through scripts/with-aws.sh)');
  process.exit(0);
}
const { app, counts } = aws;
const headers = { authorization: `Bearer ${ROOT}`, 'content-type': 'application/json' };
const body = JSON.stringify({ events: [{ type: 'o', payload: { text: 'x'.repeat(140) } }] });
const rows: Array<Record<string, string>> = [];
const measure = async (what: string, n: number, call: () => Response | Promise<Response>) => {
  for (const k of Object.keys(counts)) delete counts[k];
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const res = await call();
    if (res.status >= 300) throw new Error(`${what} answered ${res.status}`);
  }
  const ms = (performance.now() - started) / n;
  for (const [request, count] of Object.entries(counts).sort()) {
    rows.push({ what, request, 'per call': (count / n).toFixed(2), 'ms per call': ms.toFixed(1) });
  }
};
try {
  const append = () => app.request('/v1/streams/c1/events', { method: 'POST', headers, body });
  await measure('first append of a stream', 1, append);
  await measure('append', 100, append);
  await measure('read a page of 100 events', 20, () =>
    app.request('/v1/streams/c1/events?limit=100', { headers }),
  );
  await measure('head route', 20, () => app.request('/v1/streams/c1', { headers }));
  printTable('Storage requests with the head checked against the chain end (emulators)', rows);
} finally {
  await aws.cleanup();
}
