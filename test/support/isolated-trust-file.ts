import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';

/**
 * A setup file of both vitest configs: each test file keeps the client's trusted heads (its
 * default store, `defaultTrustStorePath()`) in a file of its own, removed after the file's
 * tests, and so do the processes it starts (they inherit the environment). Before, a client
 * with `verify: true` and no store, or a CLI run, wrote ~/.hefesto/trusted-heads.json, which
 * outlived the run: a later server on a reused port, with a stream of the same name and
 * another history, met a head trusted for the old one and refused it as a rewritten history.
 *
 * After its tests, each file checks that ~/.hefesto is as it found it (files run side by
 * side, so the file that fails may not be the one that wrote; the message names what changed).
 */
const HOME_DIR = join(homedir(), '.hefesto');

const listing = (): Record<string, string> => {
  let names: string[];
  try {
    names = readdirSync(HOME_DIR);
  } catch {
    return {}; // no directory: nothing there
  }
  return Object.fromEntries(
    names.map((name) => {
      const s = statSync(join(HOME_DIR, name));
      return [join(HOME_DIR, name), `${s.size} bytes, modified ${s.mtimeMs}`];
    }),
  );
};

const dir = mkdtempSync(join(tmpdir(), 'hefesto-test-trust-'));
process.env.HEFESTO_TRUST_FILE = join(dir, 'trusted-heads.json');
const before = listing();

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  expect(
    listing(),
    'a test wrote ~/.hefesto (a client or CLI run lost HEFESTO_TRUST_FILE)',
  ).toEqual(before);
});
