import { type Measured, measureOperations, type OperationUsage } from './aws-operations.js';
import { printTable } from './harness.js';

/**
 * What an operation costs on AWS, in dollars per million (issue 25; docs/operations.md, "What
 * an operation costs on AWS"): the storage requests, DynamoDB units and log bytes counted on
 * the emulators (aws-operations.ts), the Lambda duration measured there, priced at list
 * prices. Run: `bash scripts/with-aws.sh npx tsx bench/aws-costs.ts` (part of `npm run bench`).
 */

/**
 * List prices, us-east-1, on-demand, without free tiers, as published on the AWS pricing
 * pages as of 2025-06 (DynamoDB's on-demand prices after the 2024-11-01 cut; S3 Express One
 * Zone's after the 2025-04-10 cut). Dollars per unit.
 */
export const PRICES = {
  date: '2025-06 (us-east-1 list prices)',
  httpApiRequest: 1.0e-6, // API Gateway HTTP API, first 300 M a month, per 512 KB
  lambdaRequest: 0.2e-6,
  lambdaGbSecondArm: 0.0000133334, // arm64, first 7.5 B GB-s a month
  s3Put: 0.005 / 1000, // PUT, COPY, POST, LIST (S3 Standard)
  s3Get: 0.0004 / 1000, // GET, SELECT, HEAD and the rest
  s3ExpressPut: 0.00113 / 1000, // S3 Express One Zone (and $0.0032/GB uploaded: negligible here)
  s3ExpressGet: 0.00003 / 1000,
  dynamoWriteUnit: 0.625e-6, // on-demand write request unit (1 KB; transactional: 2)
  dynamoReadUnit: 0.125e-6, // on-demand read request unit (4 KB strongly consistent)
  logsIngestGb: 0.5, // CloudWatch Logs, Standard class, per GB ingested
  kmsRequest: 0.03 / 10_000,
  secretsManagerCall: 0.05 / 10_000,
} as const;

/** The stack's API function (infra/config.ts: 1024 MiB, arm64). */
export const LAMBDA_MEMORY_GB = 1024 / 1024;

/**
 * Log bytes per request besides the service's own line (measured): the HTTP API's access
 * line (infra/front-door.ts, 13 fields: ~330 B) and Lambda's platform lines in JSON format
 * (platform.start ~130 B, platform.report ~250 B), plus CloudWatch's 26 B per event.
 */
export const OTHER_LOG_BYTES = 330 + 130 + 250 + 3 * 26;

export interface CostLine {
  operation: string;
  httpApi: number;
  lambda: number;
  s3: number;
  dynamoReads: number;
  dynamoWrites: number;
  logs: number;
  total: number;
}

const perMillion = (dollars: number) => dollars * 1e6;

/**
 * Dollars per million of one operation. `durationMs`: the Lambda duration billed (rounded up
 * to 1 ms). A transaction's ConditionCheck is priced as a transactional read (2 read units;
 * DynamoDB Local reports none). `s3Express`: S3 Express One Zone request prices instead.
 */
export const costOf = (
  u: OperationUsage,
  durationMs: number,
  options: { s3Express?: boolean; logBytes?: number } = {},
): CostLine => {
  const n = (cmd: string) => u.requests[cmd] ?? 0;
  const s3Puts = n('S3 PutObjectCommand') + n('S3 ListObjectsV2Command');
  const s3Gets = n('S3 GetObjectCommand') + n('S3 HeadObjectCommand');
  const put = options.s3Express ? PRICES.s3ExpressPut : PRICES.s3Put;
  const get = options.s3Express ? PRICES.s3ExpressGet : PRICES.s3Get;
  const requests = u.httpRequests;
  const logBytes = options.logBytes ?? u.logBytes + 26 + OTHER_LOG_BYTES * requests;
  const line = {
    operation: u.operation,
    httpApi: perMillion(requests * PRICES.httpApiRequest),
    lambda: perMillion(
      requests * PRICES.lambdaRequest +
        (Math.ceil(durationMs) / 1000) * LAMBDA_MEMORY_GB * PRICES.lambdaGbSecondArm,
    ),
    s3: perMillion(s3Puts * put + s3Gets * get),
    dynamoReads: perMillion((u.readUnits + 2 * u.conditionChecks) * PRICES.dynamoReadUnit),
    dynamoWrites: perMillion(u.writeUnits * PRICES.dynamoWriteUnit),
    logs: perMillion((logBytes / 1e9) * PRICES.logsIngestGb),
  };
  const total =
    line.httpApi + line.lambda + line.s3 + line.dynamoReads + line.dynamoWrites + line.logs;
  return { ...line, total };
};

/** Two operations as one (a LangGraph step: putWrites, then put). */
export const sumUsage = (name: string, a: OperationUsage, b: OperationUsage): OperationUsage => {
  const requests = { ...a.requests };
  for (const [k, v] of Object.entries(b.requests)) requests[k] = (requests[k] ?? 0) + v;
  return {
    operation: name,
    httpRequests: a.httpRequests + b.httpRequests,
    requests,
    readUnits: a.readUnits + b.readUnits,
    conditionChecks: a.conditionChecks + b.conditionChecks,
    transactWrites: a.transactWrites + b.transactWrites,
    writeUnits: a.writeUnits + b.writeUnits,
    putBytes: a.putBytes + b.putBytes,
    recordsWritten: [...a.recordsWritten, ...b.recordsWritten],
    logBytes: a.logBytes + b.logBytes,
    logLines: a.logLines + b.logLines,
    wallMs: a.wallMs + b.wallMs,
    cpuMs: a.cpuMs + b.cpuMs,
  };
};

const money = (x: number) => x.toFixed(2);

const row = (c: CostLine) => ({
  operation: c.operation,
  'HTTP API': money(c.httpApi),
  Lambda: money(c.lambda),
  S3: money(c.s3),
  'DynamoDB reads': money(c.dynamoReads),
  'DynamoDB writes': money(c.dynamoWrites),
  Logs: money(c.logs),
  '$ per million': money(c.total),
});

export const printCosts = (measured: Measured) => {
  const ops = new Map(measured.operations.map((u) => [u.operation, u]));
  const get = (name: string) => {
    const u = ops.get(name);
    if (!u) throw new Error(`not measured: ${name}`);
    return u;
  };
  const step = sumUsage(
    'LangGraph step (putWrites + put)',
    get('LangGraph putWrites (one task, one write)'),
    get('LangGraph put (one message appended)'),
  );
  const timing = measured.timing;
  // Billed duration: the measured mean for appends and steps, the single call's otherwise.
  const duration = (u: OperationUsage) =>
    u.operation === 'append (1 event)' && timing
      ? timing.append.wallMs
      : u === step && timing
        ? timing.step.wallMs / 2
        : u.wallMs;
  printTable(
    `Storage requests per operation on S3 + DynamoDB (emulators, the Lambda wiring, a tenant's key)`,
    measured.operations.map((u) => ({
      operation: u.operation,
      requests: Object.entries(u.requests)
        .map(([k, v]) => `${v} ${k.replace('Command', '')}`)
        .join(', '),
      'read units (+ condition checks)': `${u.readUnits} (+${u.conditionChecks})`,
      'transactional writes': u.transactWrites,
      'write units': u.writeUnits,
      'records written': u.recordsWritten.join(' '),
      'S3 bytes': u.putBytes,
      'log bytes': u.logBytes,
      'ms (one call)': u.wallMs.toFixed(0),
    })),
  );
  const lines = [...measured.operations, step].map((u) => {
    const perRequest = duration(u);
    return costOf(u, perRequest * u.httpRequests);
  });
  printTable(
    `Dollars per million operations on AWS, list prices ${PRICES.date}; Lambda ${LAMBDA_MEMORY_GB * 1024} MB arm64`,
    lines.map(row),
  );
  if (timing) {
    console.log(
      `\nLambda duration from ${timing.runs} timed runs on the emulators: append ${timing.append.wallMs.toFixed(1)} ms (CPU ${timing.append.cpuMs.toFixed(1)} ms), LangGraph step ${timing.step.wallMs.toFixed(1)} ms for two requests (CPU ${timing.step.cpuMs.toFixed(1)} ms); other rows: their one call's time. Each 10 ms at 1 GB adds $${money(perMillion(0.01 * PRICES.lambdaGbSecondArm))} per million.`,
    );
  }
  // What would bring an append and a step under $8 per million (the durable-functions price).
  const append = get('append (1 event)');
  const ten = get('append (10 events)');
  const appendMs = duration(append);
  const stepMs = duration(step) * 2;
  const systemLogsOff = (u: OperationUsage) => u.logBytes + 26 + (330 + 26) * u.httpRequests;
  // The segment's bytes ride in the transaction instead: 2 more write units per KB (an upper
  // bound: they would join the segment's index record, which rounds up to a KB already).
  const inline = (u: OperationUsage): OperationUsage => ({
    ...u,
    requests: { ...u.requests, 'S3 PutObjectCommand': 0 },
    writeUnits: u.writeUnits + 2 * Math.ceil(u.putBytes / 1024),
  });
  const options: Array<[string, CostLine]> = [
    ['append, as today', costOf(append, appendMs)],
    [
      'append, Lambda platform lines off (system log level WARN)',
      costOf(append, appendMs, { logBytes: systemLogsOff(append) }),
    ],
    ['append, segments on S3 Express One Zone', costOf(append, appendMs, { s3Express: true })],
    [
      'append, small segment inline in the head transaction (no S3 PUT, its bytes in the transaction)',
      costOf(inline(append), appendMs),
    ],
    [
      'append, 10 events per request (per event)',
      scale(costOf(ten, duration(ten)), 1 / 10, 'append, 10 events per request (per event)'),
    ],
    ['LangGraph step, as today', costOf(step, stepMs)],
    ['LangGraph step, segments on S3 Express One Zone', costOf(step, stepMs, { s3Express: true })],
    ['LangGraph step, put inline (no S3 PUT)', costOf(inline(step), stepMs)],
  ];
  printTable(
    'What would bring an append and a LangGraph step under $8 per million (each option alone)',
    options.map(([name, c]) => ({
      ...row({ ...c, operation: name }),
      'under $8': c.total < 8 ? 'yes' : 'no',
    })),
  );
};

const scale = (c: CostLine, f: number, operation: string): CostLine => ({
  operation,
  httpApi: c.httpApi * f,
  lambda: c.lambda * f,
  s3: c.s3 * f,
  dynamoReads: c.dynamoReads * f,
  dynamoWrites: c.dynamoWrites * f,
  logs: c.logs * f,
  total: c.total * f,
});

export const runAwsCostsBench = async () => {
  const measured = await measureOperations(Number(process.env.BENCH_AWS_TIMED ?? 50));
  if (!measured) {
    console.log('\n(AWS costs skipped: no emulator endpoints; run via `npm run bench`.)');
    return;
  }
  printCosts(measured);
};

if (import.meta.url === `file://${process.argv[1]}`) await runAwsCostsBench();
