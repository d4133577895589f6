import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../scripts/lib/server-process.js';
import { countingAwsApp } from './aws-counting.js';
import { printTable } from './harness.js';

/**
 * HTTP figures of the append path:
 * - appends per second and p50/p99 latency over HTTP against the embedded server (`npm
 *   start`'s code path: local files + SQLite, durable writes), for 1, 10 and 100 events per
 *   request and 1 or 16 concurrent clients;
 * - S3 and DynamoDB requests per append, counted at the SDK against the emulators.
 */

const ROOT = 'bench-root-key-0123456789abcdef';

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

const body = (events: number) =>
  JSON.stringify({
    events: Array.from({ length: events }, (_, i) => ({
      type: 'observation',
      payload: { i, role: 'tool', text: 'x'.repeat(140) },
    })),
  });

const load = async (
  url: string,
  opts: { events: number; clients: number; requests: number; sameStream: boolean; tag: string },
) => {
  const payload = body(opts.events);
  const latencies: number[] = [];
  let sent = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: opts.clients }, async (_, c) => {
      const stream = opts.sameStream ? `${opts.tag}-shared` : `${opts.tag}-c${c}`;
      while (sent < opts.requests) {
        sent++;
        const t0 = performance.now();
        const res = await fetch(`${url}/v1/streams/${stream}/events`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${ROOT}`,
            'content-type': 'application/json',
            'idempotency-key': `${opts.tag}-${c}-${sent}`,
          },
          body: payload,
        });
        await res.arrayBuffer();
        if (res.status !== 201) throw new Error(`append answered ${res.status}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    'events/request': opts.events,
    clients: `${opts.clients}${opts.clients > 1 ? (opts.sameStream ? ' (one stream)' : ' (own streams)') : ''}`,
    requests: latencies.length,
    'requests/s': (latencies.length / seconds).toFixed(0),
    'events/s': ((latencies.length * opts.events) / seconds).toFixed(0),
    'p50 ms': quantile(latencies, 0.5).toFixed(2),
    'p99 ms': quantile(latencies, 0.99).toFixed(2),
  };
};

export const runHttpBench = async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-http-'));
  const server = await startServer({
    HEFESTO_DATA_DIR: dir,
    HEFESTO_API_KEY: ROOT,
    HEFESTO_LOG_LEVEL: 'silent',
  });
  try {
    const rows = [];
    await load(server.url, {
      events: 1,
      clients: 4,
      requests: 100,
      sameStream: false,
      tag: 'warm',
    });
    for (const events of [1, 10, 100]) {
      for (const [clients, sameStream] of [
        [1, false],
        [16, false],
        [16, true],
      ] as const) {
        const requests = events === 100 ? 200 : 400;
        rows.push(
          await load(server.url, {
            events,
            clients,
            requests,
            sameStream,
            tag: `e${events}c${clients}${sameStream ? 's' : 'o'}`,
          }),
        );
      }
    }
    printTable(
      'Appends over HTTP, embedded default (local files + SQLite, fsync on every commit)',
      rows,
    );
    console.log(
      '\nEach request carries an Idempotency-Key; payloads ~200 B. "one stream": all clients race for one head.',
    );
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }
  await runRequestCounts();
};

const runRequestCounts = async () => {
  const aws = await countingAwsApp(ROOT);
  if (!aws) {
    console.log(
      '\n(S3/DynamoDB request counts skipped: no emulator endpoints; run via `npm run bench`.)',
    );
    return;
  }
  const { app, counts } = aws;
  try {
    const n = 20;
    const rows = [];
    for (const withKey of [false, true]) {
      for (const k of Object.keys(counts)) delete counts[k];
      for (let i = 0; i < n; i++) {
        const res = await app.request(`/v1/streams/counted-${withKey}/events`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${ROOT}`,
            'content-type': 'application/json',
            ...(withKey ? { 'idempotency-key': `count-${i}` } : {}),
          },
          body: body(1),
        });
        if (res.status !== 201) throw new Error(`append answered ${res.status}`);
      }
      for (const [name, count] of Object.entries(counts).sort()) {
        rows.push({
          'Idempotency-Key': withKey ? 'yes' : 'no',
          request: name,
          'per append': (count / n).toFixed(2),
        });
      }
    }
    printTable(
      'Storage requests per append over HTTP (S3 + DynamoDB emulators, uncontended stream)',
      rows,
    );
    console.log(
      '\nWrites per append: one S3 PutObject (the segment) and one DynamoDB TransactWriteItems (head + segment index [+ idempotency record]); the GetItems are the head read and, with a key, the idempotency lookup (the root key is checked in memory; a tenant key adds one GetItem).',
    );
  } finally {
    await aws.cleanup();
  }
};
