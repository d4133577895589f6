import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BuildOptions, build } from 'esbuild';
import {
  BUNDLE_FILE,
  entryPath,
  esbuildOptions,
  FUNCTION_ENTRIES,
  type FunctionName,
  REPO_ROOT,
} from '../infra/bundling.js';
import { consoleFootprint } from './bundle-console.js';
import { printTable } from './harness.js';

/**
 * Lambda bundle figures: the size of each function's bundle, built with the stack's own
 * esbuild options (infra/bundling.ts), and a cold-start proxy for the API function: a fresh
 * `node` process loads the bundle and serves one API Gateway v2 `GET /healthz` event; the
 * median over COLD_RUNS processes of (load + first request), and of the whole process.
 *
 * Like Lambda, the bundle sits alone in a directory with `@aws-sdk/*` reachable through
 * NODE_PATH only (Lambda: /var/runtime/node_modules; here: the repo's node_modules). For
 * comparison, the same API bundle with the SDK bundled in (the option not taken).
 * Measured on this machine's Node (`node --version`), not Lambda's; compare rows, not
 * absolute figures.
 */

const COLD_RUNS = 7;
const MB = 1024 * 1024;
/** Target of the API bundle, minified. */
export const API_BUNDLE_LIMIT_BYTES = 1 * MB;

/** A literal API Gateway HTTP API (payload v2) event for `GET /healthz`. */
export const healthzEvent = () => ({
  version: '2.0',
  routeKey: '$default',
  rawPath: '/healthz',
  rawQueryString: '',
  headers: { host: 'abc123.execute-api.eu-west-1.amazonaws.com', 'user-agent': 'bench' },
  requestContext: {
    accountId: '123456789012',
    apiId: 'abc123',
    domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
    domainPrefix: 'abc123',
    http: {
      method: 'GET',
      path: '/healthz',
      protocol: 'HTTP/1.1',
      sourceIp: '203.0.113.9',
      userAgent: 'bench',
    },
    requestId: 'cold-start',
    routeKey: '$default',
    stage: '$default',
    time: '30/Nov/2026:08:00:00 +0000',
    timeEpoch: 1_796_025_600_000,
  },
  body: null,
  isBase64Encoded: false,
});

/** Runs in the fresh process: require the bundle, invoke once, print the timings. */
const CHILD = `
const { performance } = require('node:perf_hooks');
const started = performance.now();
const { handler } = require(process.env.BUNDLE);
const loaded = performance.now();
Promise.resolve(handler(JSON.parse(process.env.EVENT), { awsRequestId: 'cold-start' }))
  .then((res) => {
    const served = performance.now();
    console.log(JSON.stringify({ loadMs: loaded - started, firstMs: served - loaded,
      status: res && res.statusCode, body: res && res.body }));
  });
`;

export interface ColdStart {
  loadMs: number;
  firstMs: number;
  processMs: number;
  status: number;
  body: string;
}

/**
 * One cold start: a new `node` loads `bundle` (a CommonJS file) and serves `/healthz`. The
 * environment is the Lambda's minimum: settings, a region, and NODE_PATH for `@aws-sdk`.
 */
export const coldStart = (bundle: string): ColdStart => {
  const started = process.hrtime.bigint();
  const out = spawnSync(process.execPath, ['-e', CHILD], {
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH,
      NODE_PATH: join(REPO_ROOT, 'node_modules'),
      NODE_NO_WARNINGS: '1',
      AWS_REGION: 'eu-west-1',
      HEFESTO_BUCKET: 'bench-bucket',
      HEFESTO_TABLE: 'bench-table',
      HEFESTO_LOG_LEVEL: 'silent',
      BUNDLE: bundle,
      EVENT: JSON.stringify(healthzEvent()),
    },
  });
  const processMs = Number(process.hrtime.bigint() - started) / 1e6;
  if (out.status !== 0) throw new Error(`cold start of ${bundle} failed:\n${out.stderr}`);
  return { ...JSON.parse(out.stdout.trim().split('\n').at(-1) ?? '{}'), processMs };
};

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

const bundleInto = async (dir: string, name: FunctionName, options: Partial<BuildOptions> = {}) => {
  const outfile = join(dir, name, BUNDLE_FILE);
  await build({ ...esbuildOptions(name, outfile), ...options });
  return outfile;
};

const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`;
const ms = (x: number) => `${x.toFixed(0)} ms`;

interface Variant {
  label: string;
  name: FunctionName;
  options?: Partial<BuildOptions>;
}

const VARIANTS: Variant[] = [
  { label: 'api (as deployed)', name: 'api' },
  { label: 'compactor (as deployed)', name: 'compactor' },
  { label: 'api, @aws-sdk bundled (not taken)', name: 'api', options: { external: [] } },
];

export const runBundleBench = async (): Promise<void> => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bundles-'));
  try {
    const built: Array<{ variant: Variant; file: string | undefined }> = [];
    for (const [i, variant] of VARIANTS.entries()) {
      const file = existsSync(entryPath(variant.name))
        ? await bundleInto(join(dir, String(i)), variant.name, variant.options)
        : undefined;
      built.push({ variant, file });
    }
    // Cold starts of the API variants, interleaved so that a busy moment hits both alike.
    const runs = new Map<string, ColdStart[]>();
    for (let round = 0; round < COLD_RUNS; round++) {
      for (const { variant, file } of built) {
        if (variant.name !== 'api' || file === undefined) continue;
        runs.set(file, [...(runs.get(file) ?? []), coldStart(file)]);
      }
    }
    const rows = built.map(({ variant, file }) => {
      if (file === undefined) {
        return { bundle: variant.label, size: `missing: ${FUNCTION_ENTRIES[variant.name]}` };
      }
      const size = statSync(file).size;
      const row: Record<string, string> = { bundle: variant.label, size: kb(size) };
      const cold = runs.get(file);
      if (cold) {
        row['load + first request (median)'] = ms(median(cold.map((r) => r.loadMs + r.firstMs)));
        row['load (median)'] = ms(median(cold.map((r) => r.loadMs)));
        row['whole process (median)'] = ms(median(cold.map((r) => r.processMs)));
        row['under 1 MB'] = size < API_BUNDLE_LIMIT_BYTES ? 'yes' : 'no';
      }
      return row;
    });
    printTable(
      `Lambda bundles (esbuild, infra/bundling.ts) and cold-start proxy, ${COLD_RUNS} fresh processes`,
      rows,
    );
    const footprint = await consoleFootprint();
    const serving = Object.values(footprint.serving).reduce((a, b) => a + b, 0);
    printTable('The console and the docs in the API bundle (esbuild metafile, minified bytes)', [
      ...Object.entries(footprint.serving).map(([file, bytes]) => ({
        part: file,
        size: kb(bytes),
      })),
      {
        part: 'all console/docs serving code',
        size: `${kb(serving)} (${((100 * serving) / footprint.total).toFixed(1)}% of ${kb(footprint.total)})`,
      },
      {
        part: 'console build, Swagger UI, jsondiffpatch (served as files)',
        size:
          footprint.leaked.length === 0 ? '0 KB: not in the bundle' : footprint.leaked.join(', '),
      },
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
