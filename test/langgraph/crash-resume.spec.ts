import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledScript, removeBundledScripts } from '../support/bundled-script.js';
import { type Backend, backends, ROOT } from './backends.js';

/**
 * The real graph test: a StateGraph (messages reducer, a model node, a ToolNode whose tool
 * is an effectTool) runs 50 steps on HefestoSaver in a child process, is killed with SIGKILL
 * mid-run, and a new process resumes the thread from the saver. It must end with the same
 * state as an uninterrupted run of the same agent, and the tool's side effect (lines in a
 * file, which outlives the kill) must have happened once per step.
 */

/** fixtures/fifty-steps.ts bundled once, so each run is a bare `node FILE`. */
let FIXTURE: string;
beforeAll(async () => {
  FIXTURE = await bundledScript("import './test/langgraph/fixtures/fifty-steps.ts';");
});
afterAll(removeBundledScripts);

const run = (env: Record<string, string>) => {
  const child = spawn(process.execPath, [FIXTURE], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  return { child, exited, out: () => out, err: () => err };
};

const linesOf = (log: string, thread: string) =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith(`${thread} `))
    : [];

const finished = async (p: ReturnType<typeof run>) => {
  const code = await p.exited;
  if (code !== 0) throw new Error(`agent exited ${code}:\n${p.err()}`);
  return JSON.parse(p.out().trim().split('\n').at(-1) ?? 'null') as unknown[];
};

const killWhen = async (p: { child: ChildProcess }, ready: () => boolean) => {
  const deadline = Date.now() + 60_000;
  while (!ready()) {
    if (p.child.exitCode !== null) throw new Error('the agent finished before it was killed');
    if (Date.now() > deadline) throw new Error('the agent made no progress');
    await new Promise((r) => setTimeout(r, 10));
  }
  p.child.kill('SIGKILL');
};

describe.each(backends.filter((b) => b.available))('SIGKILL mid-run on $name', (kind) => {
  let backend: Backend;
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-lg-crash-'));
  beforeAll(async () => {
    backend = await kind.start();
  });
  afterAll(async () => {
    await backend?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('resumes a 50-step tool-calling graph to the state of an uninterrupted run, one tool call per step', async () => {
    const log = join(dir, `${kind.name.replace(/\W/g, '')}.log`);
    const base = { URL: backend.url, KEY: ROOT, PREFIX: 'crash', LOG: log };
    const clean = await finished(run({ ...base, THREAD: 'clean', MODE: 'start' }));
    expect(clean).toHaveLength(1 + 50 * 2 + 1);
    expect(linesOf(log, 'clean')).toHaveLength(50);

    const first = run({ ...base, THREAD: 'killed', MODE: 'start' });
    await killWhen(first, () => linesOf(log, 'killed').length >= 20);
    expect(await first.exited).toBe('SIGKILL');
    const atKill = linesOf(log, 'killed').length;
    expect(atKill).toBeLessThan(50);

    const resumed = await finished(run({ ...base, THREAD: 'killed', MODE: 'resume' }));
    expect(resumed).toEqual(clean);
    const calls = linesOf(log, 'killed');
    expect(calls).toEqual(Array.from({ length: 50 }, (_, i) => `killed ${i + 1}`));
  }, 240_000);
});
