import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../../scripts/lib/server-process.js';
import { HefestoClient } from '../../shared/client/client.js';
import type { LedgerEvent } from '../../shared/client/types.js';
import { hostEnv } from './in-process.js';

/**
 * The CLI end to end: the embedded server in a child process, and `node bin/hefesto.mjs`
 * run as a child process for every command, exactly as a user runs it.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/hefesto.mjs');
const ROOT_KEY = 'root-key-for-cli-tests-0123456789';
const STREAM = 'run-1';
const EMPTY_DIGEST = '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327';

interface Run {
  code: number | string;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI run: no HEFESTO_* from the outside (but the trust file), then `env`. */
const envOf = (env: Record<string, string>): NodeJS.ProcessEnv => ({
  ...hostEnv(),
  ...env,
});

const start = (args: string[], env: Record<string, string>, command = process.execPath) =>
  spawn(command, command === process.execPath ? [BIN, ...args] : args, {
    cwd: ROOT,
    env: envOf(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });

const finish = (child: ChildProcess): Promise<Run> =>
  new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.once('close', (code, signal) => resolve({ code: code ?? signal ?? -1, stdout, stderr }));
  });

const lines = (text: string): string[] => text.split('\n').filter((l) => l !== '');

describe('hefesto CLI', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-cli-'));
  let server: ServerProcess;
  let admin: HefestoClient;
  let env: Record<string, string>;
  const cli = (args: string[], extra: Record<string, string> = {}) =>
    finish(start(args, { ...env, ...extra }));

  beforeAll(async () => {
    server = await startServer({ HEFESTO_DATA_DIR: join(dir, 'data'), HEFESTO_API_KEY: ROOT_KEY });
    env = { HEFESTO_URL: server.url, HEFESTO_KEY: ROOT_KEY };
    admin = new HefestoClient({ baseUrl: server.url, apiKey: ROOT_KEY });
    // 1,200 plain events in three batches, a checkpoint, five more events, a checkpoint:
    // more than one read page, and state to travel through.
    for (let b = 0; b < 3; b++) {
      const batch = Array.from({ length: 400 }, (_, i) => ({
        type: i % 10 === 0 ? 'tool.call' : 'observation',
        payload: { i: b * 400 + i + 1, text: `event ${b * 400 + i + 1}` },
      }));
      await admin.append(STREAM, batch);
    }
    const first = await admin.checkpoint(STREAM, {
      ops: [{ op: 'set', path: '/turn', value: 1 }],
      baseDigest: EMPTY_DIGEST,
    });
    await admin.append(
      STREAM,
      [1, 2, 3, 4, 5].map((i) => ({ type: 'note', payload: { i } })),
    );
    await admin.checkpoint(STREAM, {
      ops: [{ op: 'set', path: '/turn', value: 2 }],
      baseDigest: first.stateDigest,
    });
  });
  afterAll(() => {
    server?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  describe('usage and errors', () => {
    it('prints its help through `npx hefesto --help` from the repository root', async () => {
      const run = await finish(start(['hefesto', '--help'], {}, 'npx'));

      expect(run.code).toBe(0);
      expect(run.stdout).toContain('usage: hefesto COMMAND');
      expect(run.stdout).toContain('hefesto verify-file FILE');
    });

    it('exits 2 on an unknown command and on an option the command does not take', async () => {
      const [unknown, option] = await Promise.all([
        cli(['frobnicate']),
        cli(['state', STREAM, '--follow']),
      ]);

      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/^error: ErrUsage: unknown command "frobnicate"/);
      expect(option.code).toBe(2);
      expect(option.stderr).toContain('unknown option --follow for state');
    });

    it('exits 1 with ErrUnauthorized without a key, and never prints a wrong one', async () => {
      const [none, wrong] = await Promise.all([
        cli(['streams', 'get', STREAM], { HEFESTO_KEY: '' }),
        cli(['streams', 'get', STREAM, '--key', 'hk_not_a_real_key_0123456789']),
      ]);

      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/^error: ErrUnauthorized: /);
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toMatch(/^error: ErrUnauthorized: /);
      expect(wrong.stderr + wrong.stdout).not.toContain('hk_not_a_real_key_0123456789');
    });
  });

  describe('keys, streams, state', () => {
    it('creates a key that works, and revokes it', async () => {
      const created = await cli([
        'keys',
        'create',
        '--tenant',
        'default',
        '--scopes',
        'read',
        '--json',
      ]);
      expect(created.code).toBe(0);
      const key = JSON.parse(created.stdout) as { id: string; key: string; scopes: string[] };
      expect(key.scopes).toEqual(['read']);

      const head = await cli(['streams', 'get', STREAM, '--json'], { HEFESTO_KEY: key.key });
      expect(head.code).toBe(0);
      expect(JSON.parse(head.stdout)).toMatchObject({ streamId: STREAM, seq: 1207, deltas: 2 });

      const revoked = await cli(['keys', 'revoke', key.id]);
      expect(revoked.stdout).toBe(`revoked ${key.id}\n`);
      const client = new HefestoClient({ baseUrl: server.url, apiKey: key.key });
      await expect(client.getStream(STREAM)).rejects.toMatchObject({ code: 'ErrUnauthorized' });
    });

    it('prints the head for people', async () => {
      const run = await cli(['streams', 'get', STREAM]);

      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^stream\s+run-1\nseq\s+1207\nhash\s+[0-9a-f]{64}\n/);
    });

    it('prints the state at a past seq and at the head', async () => {
      const [past, now] = await Promise.all([
        cli(['state', STREAM, '--at', '1201']),
        cli(['state', STREAM, '--json']),
      ]);

      expect(past.code).toBe(0);
      expect(JSON.parse(past.stdout)).toMatchObject({ seq: 1201, state: { turn: 1 } });
      expect(past.stdout).toContain('\n  "state": {');
      expect(JSON.parse(now.stdout)).toMatchObject({ seq: 1207, state: { turn: 2 } });
    });
  });

  describe('events tail', () => {
    it('prints events as NDJSON from a seq, of a type, verified on request', async () => {
      const run = await cli([
        'events',
        'tail',
        STREAM,
        '--from',
        '1191',
        '--type',
        'tool.call',
        '--verify',
      ]);

      expect(run.code).toBe(0);
      const events = lines(run.stdout).map((l) => JSON.parse(l) as LedgerEvent);
      expect(events.map((e) => e.seq)).toEqual([1191]);
      expect(events[0]).toMatchObject({ type: 'tool.call', payload: { i: 1191 } });
      expect(events[0]?.hash).toMatch(/^[0-9a-f]{64}$/);
    });

    it('follows new events until interrupted', async () => {
      await admin.append('tail-run', [{ type: 'note', payload: 1 }]);
      const child = start(['events', 'tail', 'tail-run', '--follow', '--interval', '100'], env);
      const done = finish(child);
      let out = '';
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
      });
      const until = async (n: number) => {
        for (const deadline = Date.now() + 15_000; lines(out).length < n; ) {
          if (Date.now() > deadline) throw new Error(`no ${n} lines in time: ${out}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };

      await until(1);
      await admin.append('tail-run', [{ type: 'note', payload: 2 }]);
      await until(2);
      child.kill('SIGINT');
      const run = await done;

      expect(run.code).toBe(0);
      expect(lines(out).map((l) => (JSON.parse(l) as LedgerEvent).payload)).toEqual([1, 2]);
    });
  });

  describe('verify', () => {
    it('verifies on the server', async () => {
      const run = await cli(['verify', STREAM]);

      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^ok run-1 seq 1207 hash [0-9a-f]{64}\n$/);
    });

    it('verifies here with --local, reporting progress on stderr', async () => {
      const run = await cli(['verify', STREAM, '--local', '--json']);

      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, seq: 1207 });
      expect(run.stderr).toMatch(/verify run-1: 1207\/1207 events \(100%\) ok in/);
    });

    it("refuses a --tenant that is not the key's, rather than failing the chain at seq 1", async () => {
      const run = await cli(['verify', STREAM, '--local', '--tenant', 'acme']);

      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(
        /^error: ErrTenantMismatch: .*"acme", but the key belongs to tenant "default"/,
      );
    });
  });

  describe('export, verify-file, import', () => {
    const file = join(dir, 'run-1.ndjson');
    const damaged = (name: string, edit: (lines: string[]) => void) => {
      const copy = readFileSync(file, 'utf8').split('\n');
      edit(copy);
      const path = join(dir, name);
      writeFileSync(path, copy.join('\n'));
      return path;
    };

    beforeAll(async () => {
      const run = await cli(['export', STREAM, '--out', file]);
      expect(run.code, run.stderr).toBe(0);
    });

    it('exports a header and every event with its hashes', async () => {
      const [header, ...events] = lines(readFileSync(file, 'utf8')).map((l) => JSON.parse(l));

      expect(header).toMatchObject({
        format: 'hefesto.export.v1',
        tenant: 'default',
        streamId: STREAM,
        head: { seq: 1207 },
        digestVersion: 2,
      });
      expect(events).toHaveLength(1207);
      expect(Object.keys(events[0])).toEqual(['seq', 'ts', 'type', 'payload', 'prevHash', 'hash']);
      expect(events.at(-1).hash).toBe(header.head.hash);
    });

    it('accepts the exported file offline', async () => {
      const run = await cli(['verify-file', file], {
        HEFESTO_URL: 'http://127.0.0.1:9',
        HEFESTO_KEY: '',
      });

      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^ok .*: default\/run-1 seq 1207 hash [0-9a-f]{64}\n$/);
    });

    it('names the seq whose payload had one byte changed, or whose line was removed', async () => {
      const changed = damaged('payload.ndjson', (l) => {
        l[500] = (l[500] ?? '').replace('"event 500"', '"event 501"');
      });
      const removed = damaged('removed.ndjson', (l) => l.splice(700, 1));
      const [byte, line] = await Promise.all([
        cli(['verify-file', changed, '--json']),
        cli(['verify-file', removed]),
      ]);

      expect(byte.code).toBe(1);
      expect(JSON.parse(byte.stdout)).toMatchObject({ ok: false, firstBadSeq: 500, line: 501 });
      expect(line.code).toBe(1);
      expect(line.stdout).toContain('first bad seq 700');
    });

    it('refuses a file of another tenant when --tenant names one', async () => {
      const run = await cli(['verify-file', file, '--tenant', 'acme']);

      expect(run.code).toBe(1);
      expect(run.stdout).toContain('belongs to tenant "default", not "acme"');
    });

    it('imports into a new stream with the same events and state, and resumes a partial import', async () => {
      const run = await cli(['import', file, '--stream', 'run-1-copy', '--json']);

      expect(run.code, run.stderr).toBe(0);
      const result = JSON.parse(run.stdout);
      expect(result).toMatchObject({
        source: { tenant: 'default', streamId: STREAM, seq: 1207 },
        target: { streamId: 'run-1-copy', seq: 1207 },
        written: 1207,
        skipped: 0,
      });
      expect(result.target.hash).not.toBe(result.source.hash);
      expect(await admin.verifyLocally('run-1-copy')).toMatchObject({ ok: true, seq: 1207 });
      const [source, copy] = await Promise.all([
        admin.getState(STREAM),
        admin.getState('run-1-copy'),
      ]);
      expect(copy.stateDigest).toBe(source.stateDigest);

      // A partial import: the first batch of 100 is there; the rerun writes only the rest.
      const firstBatch = lines(readFileSync(file, 'utf8'))
        .slice(1, 101)
        .map((l) => JSON.parse(l) as LedgerEvent);
      await admin.append(
        'run-1-resumed',
        firstBatch.map(({ type, payload }) => ({ type, payload })),
      );
      const resumed = await cli(['import', file, '--stream', 'run-1-resumed', '--batch', '100']);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toMatch(/written\s+1107 events/);
      expect(resumed.stdout).toMatch(/skipped\s+100 events already there/);
    });

    it('exports to stdout, and refuses to import a fork (its origin state is not in the file)', async () => {
      await admin.fork(STREAM, { newStreamId: 'run-1-fork', at: 1201 });
      const exported = await cli(['export', 'run-1-fork']);
      const path = join(dir, 'fork.ndjson');
      writeFileSync(path, exported.stdout);
      const run = await cli(['import', path, '--stream', 'fork-copy']);

      expect(exported.code).toBe(0);
      expect(lines(exported.stdout).map((l) => JSON.parse(l).type)).toEqual([
        undefined,
        'hefesto.fork',
      ]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        /^error: ErrInvalidInput: .* holds a hefesto\.fork event \(seq 1\)/m,
      );
    });

    it('refuses to import a damaged file and writes nothing', async () => {
      const path = damaged('import-bad.ndjson', (l) => l.splice(3, 1));
      const run = await cli(['import', path, '--stream', 'never']);

      expect(run.code).toBe(1);
      expect(run.stdout).toContain('first bad seq 3');
      await expect(admin.getStream('never')).rejects.toMatchObject({ code: 'ErrStreamNotFound' });
    });
  });
});
