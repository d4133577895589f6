import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * One fsync per append on the embedded store (local-stores.ts): the segment and the records
 * share one file, the segment commits without a sync and the head's transaction syncs the
 * WAL holding both. Counted from outside (strace: the fsync and fdatasync calls the process
 * makes while it appends, one append at a time), in both durability modes.
 */

/** The test command installs strace (scripts/test.sh); in CI a machine without it fails here. */
const hasStrace = spawnSync('strace', ['-V']).status === 0 || process.env.CI === 'true';
const APPENDS = 40;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-one-fsync-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The syscalls that sync a file, made while the script appends (between its marks). */
const syncsWhileAppending = (durability: string) => {
  const root = process.cwd();
  const script = `
    const { createEmbedded } = await import('${root}/functions/wiring/embedded.ts');
    const { parseSettings } = await import('${root}/shared/config/settings.ts');
    const key = 'one-fsync-root-key-0123456789';
    const embedded = createEmbedded(parseSettings({
      HEFESTO_DATA_DIR: '${dir}/data', HEFESTO_API_KEY: key, HEFESTO_LOG_LEVEL: 'silent',
      HEFESTO_COMPACT_INTERVAL_MS: '0', HEFESTO_DURABILITY: '${durability}',
    }));
    const append = async (stream, i) => {
      const res = await embedded.fetch(new Request('http://h/v1/streams/' + stream + '/events', {
        method: 'POST',
        headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' },
        body: JSON.stringify({ events: [{ type: 'note', payload: { i } }] }),
      }));
      if (res.status !== 201) throw new Error(res.status + ' ' + (await res.text()));
    };
    // Warm: the stream exists, the writer's connections are open.
    for (let i = 0; i < 3; i++) await append('s', i);
    const before = await embedded.durableWriterStats();
    process.stderr.write('MARK\\n');
    for (let i = 0; i < ${APPENDS}; i++) await append('s', 100 + i);
    const after = await embedded.durableWriterStats();
    process.stderr.write('MARK\\n');
    process.stdout.write(JSON.stringify({
      fsyncs: after.fsyncs - before.fsyncs,
      checkpoints: after.checkpoints - before.checkpoints,
    }));
    embedded.close();`;
  const trace = join(dir, 'strace.out');
  const run = spawnSync(
    'strace',
    [
      '-f',
      '-e',
      'trace=fsync,fdatasync,write',
      '-e',
      'signal=none',
      '-o',
      trace,
      process.execPath,
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      script,
    ],
    { encoding: 'utf8' },
  );
  expect(run.status, run.stderr).toBe(0);
  const lines = readFileSync(trace, 'utf8').split('\n');
  const marks = lines.flatMap((l, n) => (l.includes('MARK') ? [n] : []));
  const between = lines.slice(marks[0], marks[1]);
  const syncs = between.filter((l) => /\b(fsync|fdatasync)\(/.test(l) && !l.includes('resumed'));
  return {
    syncs: syncs.length,
    counted: JSON.parse(run.stdout) as { fsyncs: number; checkpoints: number },
  };
};

describe.runIf(hasStrace)('an append on the embedded store', () => {
  it("makes one fsync (durability 'power-loss', the default)", () => {
    const { syncs, counted } = syncsWhileAppending('power-loss');
    // A WAL checkpoint (every 200 commits) adds two; 40 appends of 2 commits may hit none or one.
    expect(syncs - 2 * counted.checkpoints).toBe(APPENDS);
    expect(counted.fsyncs).toBe(syncs);
  }, 60_000);

  it("makes none (durability 'process-crash'): only WAL checkpoints sync", () => {
    const { syncs, counted } = syncsWhileAppending('process-crash');
    expect(syncs).toBe(2 * counted.checkpoints);
    expect(counted.fsyncs).toBe(syncs);
  }, 60_000);
});
