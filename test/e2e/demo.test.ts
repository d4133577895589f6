import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/** `npm run demo` is part of the test command: crash-resume with observation replay. */
describe('npm run demo', () => {
  it('survives SIGKILLs and a hot migration with one model call per turn, one payment, the same final state', () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(result.stdout).toContain('demo passed');
    expect(result.stdout).toMatch(/\| model calls, crash run \| 50 \| yes \|/);
    expect(result.stdout).toMatch(
      /\| payments charged \(crash, migrated, clean\) \| 1, 1, 1 \| yes \|/,
    );
    expect(result.stdout).toMatch(/\| hand-over \| epoch 1 -> 2, late write ErrFenced \| yes \|/);
    expect(result.status).toBe(0);
  }, 150_000);
});
