#!/usr/bin/env node
// `npm run lint` (through `npm run check:imports`): the import graph of the repository's own
// TypeScript and JavaScript, type imports included, checked for
//
//   1. cycles: any strongly connected set of files (a type-only import counts: it still says
//      one file needs the other's shape, and Biome's noImportCycles skips those by default);
//   2. forbidden arrows: each file belongs to a room (the longest prefix in ROOMS); an import
//      from room A into room B must be listed in ALLOWED[A] (docs/architecture.md draws it).
//
// Exit status 1 with one line per finding; 0 when the graph is clean.
//
//   node scripts/check-imports.mjs            check (what lint runs)
//   node scripts/check-imports.mjs --graph    print the room graph: arrows with file counts
//   node scripts/check-imports.mjs --dot      the same as Graphviz dot (| dot -Tsvg > rooms.svg)
//   node scripts/check-imports.mjs --root DIR check another tree (the checker's own tests)
//
// Imports are read with TypeScript's preProcessFile (static, type-only, re-exports, dynamic
// `import()` with a literal), so a comment or a string that looks like an import is not one.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** Folders scanned, relative to the root; everything under node_modules and dist is skipped. */
const SCANNED = [
  'shared',
  'functions',
  'cli',
  'infra',
  'packages',
  'console',
  'scripts',
  'bench',
  'test',
  'bin',
];

/** Rooms by path prefix (longest wins). A file outside every prefix has no room: not checked. */
export const ROOMS = {
  'shared/domain/': 'domain',
  'shared/ports/': 'ports',
  'shared/config/': 'config',
  'shared/chain/': 'chain',
  'shared/leases/': 'leases',
  'shared/proofs/': 'proofs',
  'shared/commit/': 'commit',
  'shared/state/': 'state',
  'shared/history/': 'history',
  'shared/effects/': 'effects',
  'shared/keys/': 'keys',
  'shared/compaction/': 'compaction',
  'shared/verify/': 'verify',
  'shared/ledger/': 'ledger',
  'shared/adapters/': 'adapters',
  'shared/operator/': 'operator',
  'shared/http/': 'http',
  'shared/client/': 'client',
  'functions/': 'functions',
  'cli/': 'cli',
  'infra/': 'infra',
  'packages/client/': 'pkg-client',
  'packages/langgraph/': 'pkg-langgraph',
  'packages/embedded/': 'pkg-embedded',
  'packages/openai-agents/': 'pkg-openai-agents',
  'console/': 'console',
};

/** The service rooms, bottom to top: what the facade, the HTTP app and the wiring may use. */
const SERVICES = [
  'chain',
  'leases',
  'proofs',
  'keys',
  'commit',
  'state',
  'history',
  'effects',
  'compaction',
  'verify',
];

/** Which rooms a room may import (itself always). Rooms not named here may import nothing. */
export const ALLOWED = {
  domain: [],
  ports: ['domain'],
  config: ['domain'],
  chain: ['domain', 'ports'],
  leases: ['chain', 'domain', 'ports'],
  proofs: ['chain', 'domain', 'ports'],
  keys: ['chain', 'domain', 'ports'],
  commit: ['chain', 'leases', 'proofs', 'domain', 'ports'],
  state: ['chain', 'commit', 'leases', 'domain', 'ports'],
  effects: ['chain', 'commit', 'leases', 'domain', 'ports'],
  history: ['chain', 'commit', 'state', 'domain', 'ports'],
  compaction: ['chain', 'commit', 'leases', 'proofs', 'state', 'domain', 'ports'],
  verify: ['chain', 'commit', 'proofs', 'state', 'effects', 'compaction', 'domain', 'ports'],
  ledger: [...SERVICES, 'domain', 'ports'],
  adapters: ['domain', 'ports'],
  operator: [
    'adapters',
    'chain',
    'proofs',
    'keys',
    'compaction',
    'ledger',
    'config',
    'domain',
    'ports',
  ],
  http: ['ledger', ...SERVICES, 'config', 'domain', 'ports'],
  client: ['domain'],
  functions: ['http', 'ledger', 'adapters', 'operator', 'config', ...SERVICES, 'domain', 'ports'],
  cli: ['client', 'operator', 'functions', 'config', 'domain', 'ports'],
  infra: ['config', 'domain'],
  'pkg-client': ['client', 'domain'],
  'pkg-langgraph': ['pkg-client', 'client', 'domain'],
  // The in-process engine: the embedded server's wiring and its settings (and @hefesto/client).
  'pkg-embedded': ['functions', 'config'],
  'pkg-openai-agents': ['pkg-client'],
  console: ['client', 'domain'],
};

const CODE = /\.(ts|tsx|mts|mjs|js)$/;

const walk = (root, dir, out) => {
  const abs = join(root, dir);
  if (!existsSync(abs)) return;
  for (const name of readdirSync(abs)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) walk(root, rel, out);
    else if (CODE.test(name) && !name.endsWith('.d.ts')) out.push(rel.split(sep).join('/'));
  }
};

/** The repository file a relative specifier names (`./x.js` is `./x.ts` in the sources). */
const resolveSpec = (root, from, spec) => {
  const base = normalize(join(dirname(from), spec))
    .split(sep)
    .join('/');
  const candidates = [
    base,
    base.replace(/\.js$/, '.ts'),
    base.replace(/\.js$/, '.tsx'),
    `${base}.ts`,
    `${base}/index.ts`,
  ];
  return candidates.find((c) => existsSync(join(root, c)) && statSync(join(root, c)).isFile());
};

export const roomOf = (file) => {
  let best;
  for (const prefix of Object.keys(ROOMS)) {
    if (file.startsWith(prefix) && (best === undefined || prefix.length > best.length))
      best = prefix;
  }
  return best === undefined ? undefined : ROOMS[best];
};

/** The import graph under `root`: file -> set of files it imports. */
export const importGraph = (root) => {
  const files = [];
  for (const dir of SCANNED) walk(root, dir, files);
  const graph = new Map();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true);
    const targets = new Set();
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = resolveSpec(root, file, fileName);
      if (target !== undefined && target !== file) targets.add(target);
    }
    graph.set(file, targets);
  }
  return graph;
};

/** Strongly connected components with more than one file (Tarjan, iterative). */
export const cycles = (graph) => {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const found = [];
  for (const start of graph.keys()) {
    if (idx.has(start)) continue;
    const work = [[start, [...(graph.get(start) ?? [])], 0]];
    idx.set(start, index);
    low.set(start, index++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const [node, next] = frame;
      if (frame[2] < next.length) {
        const to = next[frame[2]++];
        if (!graph.has(to)) continue;
        if (!idx.has(to)) {
          idx.set(to, index);
          low.set(to, index++);
          stack.push(to);
          onStack.add(to);
          work.push([to, [...graph.get(to)], 0]);
        } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), idx.get(to)));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(node)));
      }
      if (low.get(node) === idx.get(node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== node);
        if (component.length > 1) found.push(component.sort());
      }
    }
  }
  return found;
};

/** Room arrows: "from -> to" -> [file pairs]. */
export const roomArrows = (graph) => {
  const arrows = new Map();
  for (const [file, targets] of graph) {
    const from = roomOf(file);
    if (from === undefined) continue;
    for (const target of targets) {
      const to = roomOf(target);
      if (to === undefined || to === from) continue;
      const key = `${from} -> ${to}`;
      if (!arrows.has(key)) arrows.set(key, []);
      arrows.get(key).push(`${file} -> ${target}`);
    }
  }
  return arrows;
};

export const check = (root) => {
  const graph = importGraph(root);
  const problems = [];
  for (const component of cycles(graph)) problems.push(`cycle: ${component.join(' <-> ')}`);
  for (const [arrow, pairs] of roomArrows(graph)) {
    const [from, to] = arrow.split(' -> ');
    if (!(ALLOWED[from] ?? []).includes(to)) {
      problems.push(`forbidden arrow ${arrow} (${pairs.length} imports, e.g. ${pairs[0]})`);
    }
  }
  return { graph, problems };
};

const main = () => {
  const args = process.argv.slice(2);
  const rootAt = args.indexOf('--root');
  const root = rootAt >= 0 ? args[rootAt + 1] : join(dirname(fileURLToPath(import.meta.url)), '..');
  const { graph, problems } = check(root);
  if (args.includes('--graph') || args.includes('--dot')) {
    const arrows = [...roomArrows(graph)].sort(([a], [b]) => a.localeCompare(b));
    if (args.includes('--dot')) {
      console.log('digraph rooms {');
      for (const [arrow, pairs] of arrows) {
        const [from, to] = arrow.split(' -> ');
        console.log(`  "${from}" -> "${to}" [label="${pairs.length}"];`);
      }
      console.log('}');
    } else {
      for (const [arrow, pairs] of arrows) console.log(`${arrow}  (${pairs.length})`);
      console.log(
        `${graph.size} files, ${[...graph.values()].reduce((n, s) => n + s.size, 0)} imports, ${cycles(graph).length} cycles`,
      );
    }
  }
  for (const p of problems) console.error(`[imports] ${p}`);
  if (problems.length > 0) process.exitCode = 1;
  else if (!args.includes('--graph') && !args.includes('--dot')) {
    console.error(`[imports] ${graph.size} files: no cycle, no forbidden arrow`);
  }
};

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
