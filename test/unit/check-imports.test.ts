import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

// scripts/check-imports.mjs, the import checker `npm run lint` runs: cycles (type imports
// included) and arrows between rooms that docs/architecture.md does not allow.
const repo = join(dirname(fileURLToPath(import.meta.url)), '../..');
const checker = join(repo, 'scripts/check-imports.mjs');

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const tree = (files: Record<string, string>) => {
  const root = mkdtempSync(join(tmpdir(), 'hefesto-imports-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
};

const run = (...args: string[]) => {
  const r = spawnSync(process.execPath, [checker, ...args], { encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
};

describe('import checker (npm run lint)', () => {
  it('passes on this repository', () => {
    const r = run();
    expect(r.out).toContain('no cycle, no forbidden arrow');
    expect(r.code).toBe(0);
  });

  it('passes on a clean tree with allowed arrows', () => {
    const root = tree({
      'shared/domain/a.ts': 'export type A = { a: 1 };\n',
      'shared/chain/b.ts': "import type { A } from '../domain/a.js';\nexport type B = A;\n",
    });
    const r = run('--root', root);
    expect(r.out).toContain('2 files: no cycle, no forbidden arrow');
    expect(r.code).toBe(0);
  });

  it('fails on a cycle made of type imports only', () => {
    const root = tree({
      'shared/state/a.ts': "import type { B } from './b.js';\nexport type A = { b?: B };\n",
      'shared/state/b.ts': "import type { A } from './a.js';\nexport type B = { a?: A };\n",
    });
    const r = run('--root', root);
    expect(r.code).toBe(1);
    expect(r.out).toContain('cycle: shared/state/a.ts <-> shared/state/b.ts');
  });

  it('fails on a cycle through a re-export', () => {
    const root = tree({
      'shared/state/a.ts': "export * from './b.js';\nexport const a = 1;\n",
      'shared/state/b.ts': "import { a } from './a.js';\nexport const b = a;\n",
    });
    expect(run('--root', root).code).toBe(1);
  });

  it('fails on a forbidden arrow (domain -> http), naming the import', () => {
    const root = tree({
      'shared/http/app.ts': 'export const app = 1;\n',
      'shared/domain/event.ts': "import { app } from '../http/app.js';\nexport const e = app;\n",
    });
    const r = run('--root', root);
    expect(r.code).toBe(1);
    expect(r.out).toContain(
      'forbidden arrow domain -> http (1 imports, e.g. shared/domain/event.ts -> shared/http/app.ts)',
    );
  });

  it('fails on a type-only import across a forbidden arrow (client -> state)', () => {
    const root = tree({
      'shared/state/state.ts': 'export interface S { x: number }\n',
      'shared/client/c.ts': "import type { S } from '../state/state.js';\nexport type C = S;\n",
    });
    const r = run('--root', root);
    expect(r.code).toBe(1);
    expect(r.out).toContain('forbidden arrow client -> state');
  });

  it('does not read an import out of a comment or a string', () => {
    const root = tree({
      'shared/http/app.ts': 'export const app = 1;\n',
      'shared/domain/event.ts':
        "// import { app } from '../http/app.js';\nexport const s = \"import '../http/app.js'\";\n",
    });
    expect(run('--root', root).code).toBe(0);
  });

  it('draws the room graph (--graph, --dot)', () => {
    const g = run('--graph');
    expect(g.out).toMatch(/^commit -> chain {2}\(\d+\)$/m);
    expect(g.out).toMatch(/\d+ files, \d+ imports, 0 cycles/);
    const d = run('--dot');
    expect(d.out).toContain('digraph rooms {');
    expect(d.out).toMatch(/"http" -> "ledger"/);
  });
});
