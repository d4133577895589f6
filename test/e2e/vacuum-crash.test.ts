import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import { bundledScript, removeBundledScripts } from '../support/bundled-script.js';
import { bodyOf } from './vacuum-crash-bodies.js';

/**
 * The writer thread's incremental vacuum (durable-writer-thread.mjs) runs while the store
 * serves. A child process deletes most of its objects while it keeps putting new ones and is
 * killed with SIGKILL at several points of that, vacuums running: the data directory then
 * opens, passes SQLite's integrity check, and holds every acknowledged put with its bytes.
 */

const dirs: string[] = [];
/** vacuum-crash-child.ts bundled once: each run is a bare `node FILE dir`. */
let CHILD: string;
beforeAll(async () => {
  CHILD = await bundledScript("import './test/e2e/vacuum-crash-child.ts';");
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  removeBundledScripts();
});

/** Runs the child until it has acknowledged `deletes` deletions, then SIGKILLs it. */
const runAndKill = (dir: string, deletes: number) =>
  new Promise<{ acked: string[]; vacuums: number }>((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    const acked: string[] = [];
    let vacuums = 0;
    let buffer = '';
    child.stdout.on('data', (d: Buffer) => {
      buffer += d.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        const ack = /^acked (.+)$/.exec(line);
        if (ack?.[1]) acked.push(ack[1]);
        const del = /^deleted (\d+) vacuums (\d+)$/.exec(line);
        if (del) {
          vacuums = Number(del[2]);
          if (Number(del[1]) >= deletes) child.kill('SIGKILL');
        }
      }
    });
    child.once('error', reject);
    child.once('exit', (_code, signal) =>
      signal === 'SIGKILL'
        ? resolve({ acked, vacuums })
        : reject(new Error(`child exited ${_code}`)),
    );
  });

describe('a SIGKILL while the writer vacuums', () => {
  it('leaves a database that checks and holds every acknowledged put', {
    timeout: 240_000,
  }, async () => {
    let vacuumed = 0;
    for (const deletes of [60, 200, 390]) {
      const dir = mkdtempSync(join(tmpdir(), 'hefesto-vacuum-crash-'));
      dirs.push(dir);
      const { acked, vacuums } = await runAndKill(dir, deletes);
      vacuumed += vacuums;
      const db = new Database(join(dir, 'objects.sqlite'));
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      db.close();
      const store = new LocalObjectStore({ dir });
      try {
        for (const key of acked) {
          const got = await store.get(key);
          expect(Buffer.from(got?.body ?? []).equals(bodyOf(key, 2048))).toBe(true);
        }
      } finally {
        store.close();
      }
    }
    expect(vacuumed).toBeGreaterThan(0); // the kills came while vacuums were being run
  });
});
