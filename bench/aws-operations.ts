import { Writable } from 'node:stream';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { createAwsApp } from '../functions/wiring/aws.js';
import { HefestoClient } from '../packages/client/src/index.js';
import { HefestoSaver } from '../packages/langgraph/src/index.js';
import { signingRingOf } from '../shared/adapters/aws/signing-secret.js';
import { parseAwsSettings } from '../shared/config/settings.js';
import { EMPTY_STATE_DIGEST_V2 } from '../shared/domain/state-v2/index.js';
import { createTestBucket, createTestTable, hasAwsEmulators } from '../test/support/aws.js';
import { type Capacity, type Counts, counted, itemBytes, noCapacity } from './aws-counting.js';

/**
 * The storage requests, DynamoDB capacity, log bytes and time of each API operation on S3 +
 * DynamoDB (the emulators), on the Lambda function's own wiring (functions/wiring/aws.ts:
 * signed receipts, a tenant's API key, log level info), with the SDK clients counted
 * (aws-counting.ts). Each operation is one HTTP request made once at a fixed point of a
 * fixed scenario, so the counts are exact and repeatable: test/integration/aws-request-
 * counts.test.ts pins them, bench/aws-costs.ts prices them.
 *
 * "cold" operations run on a second app over the same bucket and table: a new Lambda
 * instance, nothing cached.
 */

const ROOT = 'bench-root-key-0123456789abcdef0123';
const SECRET = JSON.stringify({ v: 1, seed: 'bench-signing-seed-0123456789abcdef' });

export interface OperationUsage {
  operation: string;
  /** HTTP requests the operation took (1 but for a saver call that needs two). */
  httpRequests: number;
  /** Storage requests by SDK command, e.g. "S3 PutObjectCommand": 1. */
  requests: Counts;
  /** Read units DynamoDB Local reported (GetItem, Query: 1 per 4 KB, strongly consistent). */
  readUnits: number;
  /** ConditionCheck actions in transactions (DynamoDB Local reports no units for them). */
  conditionChecks: number;
  /** Put, Update and Delete actions in transactions. */
  transactWrites: number;
  /**
   * Write units by the items' sizes after the operation: per 1 KB, 2 per transactional write
   * (for a deleted item, 1 KB).
   */
  writeUnits: number;
  /** Bytes of the objects written to S3. */
  putBytes: number;
  /** The sort keys' kinds of the records written (up to the first `#`). */
  recordsWritten: string[];
  /** Bytes and lines the service logged for it (its request line). */
  logBytes: number;
  logLines: number;
  /** Wall and CPU time of the operation, in process on the emulators. */
  wallMs: number;
  cpuMs: number;
}

/** An app like the Lambda function's, its clients, log and the counters behind it. */
const countingInstance = (bucket: string, table: string) => {
  const counts: Counts = {};
  const capacity = noCapacity();
  const log = { bytes: 0, lines: 0 };
  const logDestination = new Writable({
    write(chunk: Buffer | string, _enc, done) {
      log.bytes += Buffer.byteLength(chunk);
      log.lines += String(chunk).split('\n').length - 1;
      done();
    },
  });
  const settings = parseAwsSettings({
    HEFESTO_BUCKET: bucket,
    HEFESTO_TABLE: table,
    HEFESTO_API_KEY: ROOT,
    HEFESTO_LOG_LEVEL: 'info',
    HEFESTO_S3_FORCE_PATH_STYLE: 'true',
  });
  const s3 = counted(new S3Client({ forcePathStyle: true, maxAttempts: 1 }), counts, capacity);
  const dynamo = counted(new DynamoDBClient({ maxAttempts: 1 }), counts, capacity);
  const app = createAwsApp(settings, signingRingOf(SECRET), undefined, {
    s3,
    dynamo,
    logDestination,
  });
  const reset = () => {
    for (const k of Object.keys(counts)) delete counts[k];
    Object.assign(capacity, noCapacity());
    log.bytes = 0;
    log.lines = 0;
  };
  const close = () => {
    s3.destroy();
    dynamo.destroy();
  };
  return { app, counts, capacity, log, reset, close };
};

type Instance = ReturnType<typeof countingInstance>;

/** An uncounted client: reads the items an operation wrote, to size them. */
const sizer = () => new DynamoDBClient({ maxAttempts: 3 });

const writeUnitsOfWith = async (client: DynamoDBClient, capacity: Capacity) => {
  let units = 0;
  for (const { table, key, transactional } of capacity.written) {
    const { Item } = await client.send(
      new GetItemCommand({ TableName: table, Key: key as never, ConsistentRead: true }),
    );
    const kib = Math.max(1, Math.ceil((Item ? itemBytes(Item) : 1024) / 1024));
    units += kib * (transactional ? 2 : 1);
  }
  return units;
};

const event = (i: number) => ({ type: 'observation', payload: { i, text: 'x'.repeat(140) } });

/** Mean wall and CPU ms of an operation repeated on a warm instance (the emulators). */
export interface Timing {
  wallMs: number;
  cpuMs: number;
}

export interface Measured {
  operations: OperationUsage[];
  /** With `timed > 0`: an append of 1 event, and a LangGraph step (putWrites, then put). */
  timing?: { append: Timing; step: Timing; runs: number };
}

/**
 * Runs the scenario, then (`timed > 0`) that many appends and LangGraph steps timed;
 * undefined when no emulator endpoints are configured.
 */
export const measureOperations = async (timed = 0): Promise<Measured | undefined> => {
  if (!hasAwsEmulators()) return undefined;
  const bucket = await createTestBucket();
  const table = await createTestTable();
  const warm = countingInstance(bucket.name, table.name);
  const cold = countingInstance(bucket.name, table.name);
  const results: OperationUsage[] = [];
  const sizing = sizer();
  const writeUnitsOf = (capacity: Capacity) => writeUnitsOfWith(sizing, capacity);
  try {
    const rootHeaders = { authorization: `Bearer ${ROOT}`, 'content-type': 'application/json' };
    const created = await warm.app.request('/v1/keys', {
      method: 'POST',
      headers: rootHeaders,
      body: JSON.stringify({ tenant: 'acme', scopes: ['read', 'write'] }),
    });
    const { key } = (await created.json()) as { key: string };
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    let idem = 0;
    const call = async (instance: Instance, path: string, body?: unknown) => {
      const res = await instance.app.request(path, {
        method: body === undefined ? 'GET' : 'POST',
        headers: body === undefined ? headers : { ...headers, 'idempotency-key': `k-${++idem}` },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${path} answered ${res.status}: ${text}`);
      return JSON.parse(text) as Record<string, unknown>;
    };
    let httpRequests = 0;
    const measure = async <T>(
      operation: string,
      instance: Instance,
      run: () => Promise<T>,
    ): Promise<T> => {
      instance.reset();
      httpRequests = 0;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const out = await run();
      const wallMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      results.push({
        operation,
        httpRequests: httpRequests || 1,
        requests: Object.fromEntries(Object.entries(instance.counts).sort()),
        readUnits: instance.capacity.readUnits,
        conditionChecks: instance.capacity.conditionChecks,
        transactWrites: instance.capacity.transactWrites,
        writeUnits: await writeUnitsOf(instance.capacity),
        putBytes: instance.capacity.putBytes,
        recordsWritten: instance.capacity.written.map(({ key }) => {
          const sk = String((key.sk as { S?: string } | undefined)?.S ?? '?');
          return sk.includes('#') ? sk.slice(0, sk.indexOf('#') + 1) : sk;
        }),
        logBytes: instance.log.bytes,
        logLines: instance.log.lines,
        wallMs,
        cpuMs: (cpu.user + cpu.system) / 1000,
      });
      return out;
    };

    // Appends: a stream's first, then one at seq 5 (each with an Idempotency-Key).
    const append = (i: number) => call(warm, '/v1/streams/run/events', { events: [event(i)] });
    await measure('append, first of a stream', warm, () => append(1));
    for (let i = 2; i <= 4; i++) await append(i);
    await measure('append (1 event)', warm, () => append(5));
    await measure('append (10 events)', warm, () =>
      call(warm, '/v1/streams/run/events', {
        events: Array.from({ length: 10 }, (_, i) => event(i)),
      }),
    );

    // Checkpoints: 30 deltas (a base snapshot at the 25th), one measured at the 10th.
    let digest = EMPTY_STATE_DIGEST_V2;
    const checkpoint = async (turn: number) => {
      const res = await call(warm, '/v1/streams/agent/checkpoints', {
        ops: [
          { op: 'set', path: '/turn', value: turn },
          { op: 'set', path: `/note${turn}`, value: `turn ${turn}: ${'y'.repeat(120)}` },
        ],
        baseDigest: digest,
      });
      digest = res.stateDigest as string;
    };
    for (let turn = 1; turn <= 30; turn++) {
      if (turn === 10) await measure('checkpoint (2 ops)', warm, () => checkpoint(turn));
      else if (turn === 25)
        await measure('checkpoint writing a base (every 25th)', warm, () => checkpoint(turn));
      else await checkpoint(turn);
    }
    await measure('state at the head (warm instance)', warm, () =>
      call(warm, '/v1/streams/agent/state'),
    );
    await measure('hydration at a base (cold instance, state at seq 25)', cold, () =>
      call(cold, '/v1/streams/agent/state?at=25'),
    );
    await measure('hydration at base + 5 deltas (cold instance, seq 30)', cold, () =>
      call(cold, '/v1/streams/agent/state?at=30'),
    );
    await measure('fork at a base (seq 25)', warm, () =>
      call(warm, '/v1/streams/agent/fork', { newStreamId: 'agent-fork', at: 25 }),
    );
    await measure('inclusion proof (seq 5 of 30)', warm, () =>
      call(warm, '/v1/streams/agent/proofs/inclusion?seq=5'),
    );
    await measure('consistency proof (10 to 30)', warm, () =>
      call(warm, '/v1/streams/agent/proofs/consistency?from=10'),
    );

    // The LangGraph saver, through the client SDK in process (each fetch counted).
    const fetchIn = (async (input: string | URL | Request, init?: RequestInit) => {
      httpRequests++;
      return warm.app.fetch(new Request(input, init));
    }) as typeof fetch;
    const saver = new HefestoSaver({
      client: new HefestoClient({ baseUrl: 'http://in-process', apiKey: key, fetch: fetchIn }),
    });
    const thread = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    const meta = { source: 'loop' as const, step: 0, parents: {} };
    const ckpt = (n: number) => ({
      v: 4,
      id: `id-${String(n).padStart(4, '0')}`,
      ts: '2026-01-01T00:00:00.000Z',
      channel_values: { messages: Array.from({ length: n }, (_, i) => `message ${i}`) },
      channel_versions: { messages: n },
      versions_seen: {},
    });
    let config = await saver.put(thread, ckpt(1), meta, { messages: 1 });
    for (let n = 2; n <= 9; n++) {
      await saver.putWrites(config, [['messages', `w${n}`]], `task-${n}`);
      config = await saver.put(config, ckpt(n), meta, { messages: n });
    }
    await measure('LangGraph putWrites (one task, one write)', warm, () =>
      saver.putWrites(config, [['messages', 'w10']], 'task-10'),
    );
    config = await measure('LangGraph put (one message appended)', warm, () =>
      saver.put(config, ckpt(10), meta, { messages: 10 }),
    );
    await measure('LangGraph getTuple (the tip this saver holds)', warm, () =>
      saver.getTuple(thread),
    );
    if (timed === 0) return { operations: results };
    const time = async (run: (i: number) => Promise<unknown>): Promise<Timing> => {
      for (let i = 0; i < 5; i++) await run(-1 - i);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < timed; i++) await run(i);
      const cpu = process.cpuUsage(cpu0);
      return {
        wallMs: (performance.now() - t0) / timed,
        cpuMs: (cpu.user + cpu.system) / 1000 / timed,
      };
    };
    const appendTiming = await time((i) =>
      call(warm, '/v1/streams/timed/events', { events: [event(i)] }),
    );
    let n = 11;
    const step = await time(async () => {
      await saver.putWrites(config, [['messages', `w${n}`]], `task-${n}`);
      config = await saver.put(config, ckpt(n), meta, { messages: n });
      n++;
    });
    return { operations: results, timing: { append: appendTiming, step, runs: timed } };
  } finally {
    warm.close();
    cold.close();
    sizing.destroy();
    await Promise.all([bucket.cleanup(), table.cleanup()]);
  }
};
