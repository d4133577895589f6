import { z } from 'zod';
import { InvalidInputError } from '../domain/errors.js';
import { DEFAULT_LIMITS, type HttpLimits } from '../http/limits.js';

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
 * | HEFESTO_SIGNING_SECRET      | (none)       | AWS: secret holding the signing key seed  |
 */

export type Env = Record<string, string | undefined>;

export interface Settings {
  port: number;
  /** Embedded server: the address to bind; undefined = loopback only (127.0.0.1 and ::1). */
  host: string | undefined;
  dataDir: string;
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
  /** AWS: the Secrets Manager secret of the tree-head signing key (API function only). */
  signingSecret: string | undefined;
}

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
  HEFESTO_SIGNING_SECRET: text(),
});

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
  return {
    port: e.PORT,
    host: e.HEFESTO_HOST,
    dataDir: e.HEFESTO_DATA_DIR,
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
    signingSecret: e.HEFESTO_SIGNING_SECRET,
  };
};

/** Settings of the embedded server (`npm start`). */
export const parseSettings = (env: Env): Settings => parse(env, []);

/** Settings of the Lambda entry: HEFESTO_BUCKET and HEFESTO_TABLE are required. */
export const parseAwsSettings = (env: Env): AwsSettings => {
  const settings = parse(env, ['HEFESTO_BUCKET', 'HEFESTO_TABLE']);
  return settings as AwsSettings;
};
