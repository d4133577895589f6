import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * An engine closed and another opened after it, in a process with nothing else to do: the
 * first close waits for its writer thread to end (durable-writer.ts), which must keep the
 * process alive until it has, or the process ends in the middle of the script.
 */

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-reopen-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('openEmbedded, closed and opened again in one process', () => {
  it('runs the script to its end, each engine reading what the one before wrote', () => {
    const root = process.cwd();
    const run = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `
        const { openEmbedded } = await import('${root}/packages/embedded/src/index.ts');
        for (const [i, durability] of ['power-loss', 'process-crash', 'power-loss'].entries()) {
          const engine = await openEmbedded({
            dataDir: '${dir}/a', durability, logLevel: 'silent',
            env: { HEFESTO_COMPACT_INTERVAL_MS: '0' },
          });
          await engine.client.append('s', [{ type: 'note', payload: i }]);
          const { events } = await engine.client.readEvents('s');
          process.stdout.write(events.length + ' ');
          await engine.close();
        }
        process.stdout.write('done');`,
      ],
      { encoding: 'utf8' },
    );
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('1 2 3 done');
  }, 60_000);
});
