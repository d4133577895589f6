import { z } from 'zod';
import { InvalidInputError } from '../domain/errors.js';
import { DEFAULT_LIMITS, type HttpLimits } from '../domain/limits.js';
import { memoryOf } from '../domain/state-v2/budget.js';

/**
 * Settings: read from the environment once, at start, typed and validated. A bad value
 * stops the process with one message naming every bad variable. Components (clients,
 * stores, clock) are built from these by the wiring, never from the environment directly.
 *
 * | variable                    | default      | meaning                                   |
 * | --------------------------- | ------------ | ----------------------------------------- |
 * | PORT                        | 8787         | embedded server port                      |
 * | HEFESTO_HOST                | (loopback)   | embedded server address; unset: 127.0.0.1 |
 * |                             |              | and ::1 only (`0.0.0.0` / `::`: open)     |
 * | HEFESTO_DATA_DIR            | ./.hefesto   | embedded data directory                   |
 * | HEFESTO_WORKERS             | 1            | embedded: HTTP worker processes; > 1: one |
 * |                             |              | writer process owns the data dir and N    |
 * |                             |              | workers serve (docs/operations.md)        |
 * | HEFESTO_WRITER_TIMEOUT_MS   | 30000        | embedded, workers > 1: a write's wait for |
 * |                             |              | the writer's reply before a 503           |
 * | HEFESTO_DURABILITY          | power-loss   | embedded: what a commit survives:         |
 * |                             |              | `power-loss` (an fsync per commit) or     |
 * |                             |              | `process-crash` (no fsync at a commit; a  |
 * |                             |              | power cut may lose the last commits)      |
 * | HEFESTO_API_KEY             | (none)       | root key, tenant `default` (>= 16 chars)  |
 * | HEFESTO_BUCKET              | (none)       | S3 bucket (required on AWS)               |
 * | HEFESTO_TABLE               | (none)       | DynamoDB table (required on AWS)          |
 * | HEFESTO_S3_FORCE_PATH_STYLE | false        | path-style S3 URLs (emulators)            |
 * | HEFESTO_MAX_EVENTS          | 500          | events per append                         |
 * | HEFESTO_MAX_PAYLOAD_BYTES   | 262144       | canonical JSON bytes per payload          |
 * | HEFESTO_MAX_BODY_BYTES      | 4194304      | request body bytes                        |
 * | HEFESTO_MAX_JSON_DEPTH      | 32           | nesting of objects/arrays in a body       |
 * | HEFESTO_SNAPSHOT_EVERY      | 25           | base snapshot every K delta checkpoints   |
 * | HEFESTO_LOG_LEVEL           | info         | pino level, or `silent`                   |
 * | HEFESTO_COMPACT_INTERVAL_MS | 60000        | embedded compactor timer (0 = off)        |
 * | HEFESTO_COMPACT_TARGET_BYTES| 4194304      | target size of a merged segment           |
 * | HEFESTO_COMPACT_EVERY       | 16           | segments per stream between visits        |
 * | HEFESTO_COMPACT_GRACE_SECONDS | 600        | superseded objects stay readable this long|
 * | HEFESTO_COMPACT_MAX_STREAMS | 100          | streams visited per run                   |
 * | HEFESTO_COMPACT_MAX_RUN_MS  | 50000        | time budget of one run                    |
 * | HEFESTO_RETENTION_DAYS      | 0            | default TTL of new streams (0 = forever)  |
 * | HEFESTO_WITNESS_BUCKET      | (none)       | AWS: Object Lock bucket of the witness    |
 * | HEFESTO_SEGMENT_BUCKET      | (none)       | AWS: bucket of ledger segments (S3 Express|
 * |                             |              | One Zone; unset: HEFESTO_BUCKET)          |
 * | HEFESTO_KEY_STORE           | (none)       | embedded: key store file; set: new streams|
 * |                             |              | are encrypted at rest (docs/privacy.md)   |
 * | HEFESTO_KMS_KEY_ARN         | (none)       | AWS: KMS key wrapping the stream keys;    |
 * |                             |              | set: new streams are encrypted at rest    |
 * | HEFESTO_SIGNING_SECRET      | (none)       | AWS: secret holding the signing key seed  |
 * | HEFESTO_SIGNING_KEY_IDS     | (none)       | AWS: the valid signing key ids, k1,k2,... |
 * | HEFESTO_MAX_STATE_NODES     | 500000       | JSON values one request may materialise   |
 * | HEFESTO_MAX_STATE_BYTES     | 83886080     | canonical bytes of the same (80 MiB)      |
 * | HEFESTO_MEMORY_MIB          | 1024         | process memory ceiling the caches and one |
 * |                             |              | request's budget must fit (on Lambda: the |
 * |                             |              | function's AWS_LAMBDA_FUNCTION_MEMORY_SIZE)|
 *
 * The memory ceiling (docs/state-v2.md, "Limits"): a fixed reserve for the runtime, the chunk
 * cache (1/16 of it), the warm-state cache (1/4, counted by the memory its states' extents
 * take: state-v2/budget.ts memoryOf), and what one
 * request at its budget holds must add up to at most HEFESTO_MEMORY_MIB, or the process does
 * not start. At run time the caches and every request draw on one pool of the ceiling less the
 * reserve (services/memory-pool.ts), so concurrent requests cannot add up past it either.
 */

export type Env = Record<string, string | undefined>;

/**
 * What a commit of the embedded store survives: `power-loss` (the default: the WAL synced at
 * every commit, `synchronous=FULL`), or `process-crash` (never synced at a commit,
 * `synchronous=NORMAL`: a crash of the process loses nothing acknowledged, a power cut may
 * lose the last commits; as SqliteSaver's default). The same names as the durable writer's.
 */
export const DURABILITIES = ['power-loss', 'process-crash'] as const;
export type Durability = (typeof DURABILITIES)[number];

export interface Settings {
  port: number;
  /** Embedded server: the address to bind; undefined = loopback only (127.0.0.1 and ::1). */
  host: string | undefined;
  dataDir: string;
  /** Embedded: what a commit survives (docs/operations.md, "Durability"). */
  durability: Durability;
  /**
   * Embedded: HTTP worker processes (1: one process does everything); more: one writer
   * process owns the data dir and applies every write they send (docs/operations.md,
   * "Every core").
   */
  workers: number;
  /** Embedded, workers > 1: how long a worker's write waits for the writer's reply. */
  writerTimeoutMs: number;
  apiKey: string | undefined;
  bucket: string | undefined;
  table: string | undefined;
  s3ForcePathStyle: boolean;
  limits: HttpLimits;
  snapshotEvery: number;
  logLevel: LogLevel;
  compaction: CompactionSettings;
  /** Default retention of new streams, days; 0 = keep forever. */
  retentionDays: number;
  /** AWS: the witness bucket (Object Lock); embedded mode uses `{dataDir}/witness`. */
  witnessBucket: string | undefined;
  /** AWS: the bucket of ledger segments (an S3 Express One Zone directory bucket); unset: `bucket`. */
  segmentBucket: string | undefined;
  /**
   * Embedded: the key store file (docs/privacy.md; keep it outside the data directory). Set:
   * new streams' events are encrypted at rest. Unset (for now the default): in the clear.
   */
  keyStore: string | undefined;
  /**
   * AWS: the KMS key (ARN) that wraps each stream's data key, the tenant, stream and key id
   * in the encryption context (docs/privacy.md, Decision 3). Set: new streams are encrypted.
   */
  kmsKeyArn: string | undefined;
  /** AWS: the Secrets Manager secret of the tree-head signing key (API function only). */
  signingSecret: string | undefined;
  /**
   * AWS: the key ids the stack pins (comma-separated): the secret's current key must be one
   * of them and each must be in its ring, checked at cold start. Empty: no pin.
   */
  signingKeyIds: string[];
  work: WorkSettings;
}

/** Work budgets and the memory ceiling they fit (docs/state-v2.md, "Limits"). */
export interface WorkSettings {
  /** What one request may materialise: JSON values and canonical bytes. */
  budget: { maxNodes: number; maxBytes: number };
  memoryMiB: number;
  chunkCacheBytes: number;
  /** Memory the warm-state cache may take, by its states' extents (memoryOf). */
  stateCacheBytes: number;
}

/**
 * Runtime, code, sockets and buffers (an idle embedded server: ~150 MiB RSS), and some of the
 * heap the GC has not given back yet: what the memory pool does not lend (docs/state-v2.md,
 * "Limits": RSS runs above what the pool lends by these, as bench/work-budgets.ts shows).
 */
export const RUNTIME_RESERVE_MIB = 256;

export interface CompactionSettings {
  /** Embedded server: run the compactor every this many ms; 0 = never. */
  intervalMs: number;
  targetBytes: number;
  /** Segments a stream gets between two compactor visits. */
  markEvery: number;
  graceMs: number;
  maxStreams: number;
  maxRunMs: number;
}

/** Settings for the Lambda entry: bucket and table are required. */
export interface AwsSettings extends Settings {
  bucket: string;
  table: string;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** An empty variable counts as unset. */
const unset = (value: unknown) => (value === '' ? undefined : value);

const integer = (min: number, max: number, fallback: number) =>
  z.preprocess(
    unset,
    z
      .string()
      .regex(/^\d+$/, 'must be a whole number')
      .transform(Number)
      .pipe(z.number().int().min(min).max(max))
      .default(fallback),
  );

const text = () => z.preprocess(unset, z.string().optional());

const flag = z.preprocess(
  unset,
  z
    .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
    .default('false')
    .transform((v) => v === 'true' || v === '1'),
);

const EnvSchema = z.object({
  PORT: integer(1, 65_535, 8787),
  HEFESTO_HOST: z.preprocess(
    unset,
    z
      .string()
      .regex(/^[A-Za-z0-9.:-]{1,253}$/, 'must be an IP address or a host name, e.g. 0.0.0.0')
      .optional(),
  ),
  HEFESTO_DATA_DIR: z.preprocess(unset, z.string().default('./.hefesto')),
  HEFESTO_DURABILITY: z.preprocess(unset, z.enum(DURABILITIES).default('power-loss')),
  HEFESTO_WORKERS: integer(1, 64, 1),
  HEFESTO_WRITER_TIMEOUT_MS: integer(100, 600_000, 30_000),
  HEFESTO_API_KEY: z.preprocess(
    unset,
    z
      .string()
      .regex(/^[\x21-\x7e]{16,512}$/, 'must be 16..512 printable characters without spaces')
      .optional(),
  ),
  HEFESTO_BUCKET: text(),
  HEFESTO_TABLE: text(),
  HEFESTO_S3_FORCE_PATH_STYLE: flag,
  HEFESTO_MAX_EVENTS: integer(1, 100_000, DEFAULT_LIMITS.maxEvents),
  HEFESTO_MAX_PAYLOAD_BYTES: integer(1, 64 * 1024 * 1024, DEFAULT_LIMITS.maxPayloadBytes),
  HEFESTO_MAX_BODY_BYTES: integer(1, 64 * 1024 * 1024, DEFAULT_LIMITS.maxBodyBytes),
  // Capped well below the ~4,000 levels where Node's own recursive serializers overflow.
  HEFESTO_MAX_JSON_DEPTH: integer(4, 1000, DEFAULT_LIMITS.maxJsonDepth),
  HEFESTO_SNAPSHOT_EVERY: integer(1, 10_000, 25),
  HEFESTO_LOG_LEVEL: z.preprocess(unset, z.enum(LOG_LEVELS).default('info')),
  HEFESTO_COMPACT_INTERVAL_MS: integer(0, 86_400_000, 60_000),
  HEFESTO_COMPACT_TARGET_BYTES: integer(1024, 1024 * 1024 * 1024, 4 * 1024 * 1024),
  HEFESTO_COMPACT_EVERY: integer(1, 100_000, 16),
  HEFESTO_COMPACT_GRACE_SECONDS: integer(1, 7 * 86_400, 600),
  HEFESTO_COMPACT_MAX_STREAMS: integer(1, 100_000, 100),
  HEFESTO_COMPACT_MAX_RUN_MS: integer(100, 3_600_000, 50_000),
  HEFESTO_RETENTION_DAYS: integer(0, 36_500, 0),
  HEFESTO_WITNESS_BUCKET: text(),
  HEFESTO_SEGMENT_BUCKET: text(),
  HEFESTO_KEY_STORE: text(),
  HEFESTO_KMS_KEY_ARN: z.preprocess(
    unset,
    z
      .string()
      .regex(/^arn:aws[\w-]*:kms:[\w-]+:\d{12}:key\/[\w-]+$/, 'must be a KMS key ARN')
      .optional(),
  ),
  HEFESTO_SIGNING_SECRET: text(),
  HEFESTO_SIGNING_KEY_IDS: z.preprocess(
    unset,
    z
      .string()
      .regex(/^[\w.-]+(,[\w.-]+)*$/, 'must be key ids separated by commas')
      .optional(),
  ),
  HEFESTO_MAX_STATE_NODES: integer(1000, 100_000_000, 500_000),
  HEFESTO_MAX_STATE_BYTES: integer(1024 * 1024, 16 * 1024 * 1024 * 1024, 80 * 1024 * 1024),
  HEFESTO_MEMORY_MIB: z.preprocess(
    unset,
    z.string().regex(/^\d+$/, 'must be a whole number').optional(),
  ),
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: z.preprocess(unset, z.string().optional()),
});

const MIB = 1024 * 1024;

/** The ceiling's parts, or the problem that they do not fit. */
const workSettings = (e: z.infer<typeof EnvSchema>): WorkSettings | string => {
  const memoryMiB = Number(e.HEFESTO_MEMORY_MIB ?? e.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? 1024);
  if (!Number.isSafeInteger(memoryMiB) || memoryMiB < 256 || memoryMiB > 1024 * 1024) {
    return 'HEFESTO_MEMORY_MIB: must be a whole number of MiB from 256';
  }
  const budget = { maxNodes: e.HEFESTO_MAX_STATE_NODES, maxBytes: e.HEFESTO_MAX_STATE_BYTES };
  const work = {
    budget,
    memoryMiB,
    chunkCacheBytes: Math.floor((memoryMiB * MIB) / 16),
    stateCacheBytes: Math.floor((memoryMiB * MIB) / 4),
  };
  const total =
    RUNTIME_RESERVE_MIB * MIB +
    work.chunkCacheBytes +
    work.stateCacheBytes +
    memoryOf({ nodes: budget.maxNodes, bytes: budget.maxBytes });
  if (total > memoryMiB * MIB) {
    return `HEFESTO_MAX_STATE_NODES / HEFESTO_MAX_STATE_BYTES: one request at this budget needs about ${Math.ceil(memoryOf({ nodes: budget.maxNodes, bytes: budget.maxBytes }) / MIB)} MiB, more than HEFESTO_MEMORY_MIB=${memoryMiB} leaves beside the runtime and the caches (${Math.ceil((memoryMiB * MIB - (total - memoryOf({ nodes: budget.maxNodes, bytes: budget.maxBytes }))) / MIB)} MiB)`;
  }
  return work;
};

const fail = (problems: string[]): never => {
  throw new InvalidInputError(`invalid settings:\n  ${problems.join('\n  ')}`);
};

const parse = (env: Env, required: Array<keyof z.infer<typeof EnvSchema>>): Settings => {
  const result = EnvSchema.safeParse(env);
  const problems = result.success
    ? []
    : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  for (const name of required) {
    if (unset(env[name]) === undefined) problems.push(`${name}: required`);
  }
  if (!result.success || problems.length > 0) return fail(problems);
  const e = result.data;
  const work = workSettings(e);
  if (typeof work === 'string') return fail([work]);
  return {
    port: e.PORT,
    host: e.HEFESTO_HOST,
    dataDir: e.HEFESTO_DATA_DIR,
    durability: e.HEFESTO_DURABILITY,
    workers: e.HEFESTO_WORKERS,
    writerTimeoutMs: e.HEFESTO_WRITER_TIMEOUT_MS,
    apiKey: e.HEFESTO_API_KEY,
    bucket: e.HEFESTO_BUCKET,
    table: e.HEFESTO_TABLE,
    s3ForcePathStyle: e.HEFESTO_S3_FORCE_PATH_STYLE,
    limits: {
      maxEvents: e.HEFESTO_MAX_EVENTS,
      maxPayloadBytes: e.HEFESTO_MAX_PAYLOAD_BYTES,
      maxBodyBytes: e.HEFESTO_MAX_BODY_BYTES,
      maxJsonDepth: e.HEFESTO_MAX_JSON_DEPTH,
    },
    snapshotEvery: e.HEFESTO_SNAPSHOT_EVERY,
    logLevel: e.HEFESTO_LOG_LEVEL,
    compaction: {
      intervalMs: e.HEFESTO_COMPACT_INTERVAL_MS,
      targetBytes: e.HEFESTO_COMPACT_TARGET_BYTES,
      markEvery: e.HEFESTO_COMPACT_EVERY,
      graceMs: e.HEFESTO_COMPACT_GRACE_SECONDS * 1000,
      maxStreams: e.HEFESTO_COMPACT_MAX_STREAMS,
      maxRunMs: e.HEFESTO_COMPACT_MAX_RUN_MS,
    },
    retentionDays: e.HEFESTO_RETENTION_DAYS,
    witnessBucket: e.HEFESTO_WITNESS_BUCKET,
    segmentBucket: e.HEFESTO_SEGMENT_BUCKET,
    keyStore: e.HEFESTO_KEY_STORE,
    kmsKeyArn: e.HEFESTO_KMS_KEY_ARN,
    signingSecret: e.HEFESTO_SIGNING_SECRET,
    signingKeyIds: e.HEFESTO_SIGNING_KEY_IDS?.split(',') ?? [],
    work,
  };
};

/** Settings of the embedded server (`npm start`). */
export const parseSettings = (env: Env): Settings => parse(env, []);

/** Settings of the Lambda entry: HEFESTO_BUCKET and HEFESTO_TABLE are required. */
export const parseAwsSettings = (env: Env): AwsSettings => {
  const settings = parse(env, ['HEFESTO_BUCKET', 'HEFESTO_TABLE']);
  return settings as AwsSettings;
};
