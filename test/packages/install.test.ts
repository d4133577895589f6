import { execFile } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../../scripts/lib/server-process.js';
import { docBlocks, outputErrors, unaccounted } from './doc-blocks.js';
import { embeddedInstallTests } from './embedded-install.js';
import {
  dependencyTree,
  importGraph,
  isServerModule,
  packageFiles,
  readManifest,
} from './package-graph.js';

/**
 * The installable packages as a user gets them: `npm run pack` builds the tarballs, a fresh
 * project outside the repository installs them (their runtime dependencies from the npm
 * cache or the registry), and plain `node` runs an agent from that project against the
 * embedded server. Nothing in the project may reach the repository's files: a package that
 * works only inside the repository fails here.
 */

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '../..');
const FIXTURES = join(import.meta.dirname, 'fixtures');
const ROOT = readManifest(REPO) as ReturnType<typeof readManifest> & {
  devDependencies: Record<string, string>;
};
const VERSION = ROOT.version;
const TARBALLS = [
  join(REPO, `dist/packages/hefesto-client-${VERSION}.tgz`),
  join(REPO, `dist/packages/hefesto-langgraph-${VERSION}.tgz`),
];
const EMBEDDED_TARBALL = join(REPO, `dist/packages/hefesto-embedded-${VERSION}.tgz`);
/** Installed on its own, next to the SDK it is a session for (its peer). */
const OPENAI_TARBALL = join(REPO, `dist/packages/hefesto-openai-agents-${VERSION}.tgz`);

/** A child's environment with nothing of this process's tooling: no loader, no npm run. */
const outsideEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    const keep = !k.startsWith('npm_') || k === 'npm_config_cache' || k === 'npm_config_registry';
    if (keep && k !== 'NODE_OPTIONS' && k !== 'NODE_PATH') env[k] = v;
  }
  return { ...env, ...extra };
};

/**
 * TypeScript consumers of the installed types. Each has an error that exists only if the
 * types are real: with types resolved to `any`, its @ts-expect-error is unused and fails.
 * (Kept here, not as .mts/.cts files, so the repository's own typecheck does not read them.)
 */
const CONSUMERS = {
  'consumer.mts': `import { HefestoClient, resume, type StateResult } from '@hefesto/client';
const client = new HefestoClient({ baseUrl: 'http://localhost:8787', apiKey: 'key' });
const state: Promise<StateResult> = client.getState('run-1');
void state;
void resume(client, 'run-1');
// @ts-expect-error -- append needs a stream id and events
void client.append();
`,
  'consumer.cts': `import hefesto = require('@hefesto/client');
const client = new hefesto.HefestoClient({ baseUrl: 'http://localhost:8787', apiKey: 'key' });
const state: Promise<hefesto.StateResult> = client.getState('run-1');
void state;
// @ts-expect-error -- getState needs a stream id
void client.getState();
`,
};

/** The same for @hefesto/openai-agents: a HefestoSession is the SDK's Session. */
const SESSION_CONSUMERS = {
  'session.mts': `import type { SessionHistoryTransactionAwareSession } from '@openai/agents-core';
import { HefestoSession } from '@hefesto/openai-agents';
const session: SessionHistoryTransactionAwareSession = new HefestoSession({
  sessionId: 's-1',
  baseUrl: 'http://localhost:8787',
  apiKey: 'key',
});
void session;
// @ts-expect-error -- a session needs a client, or a baseUrl and an apiKey
void new HefestoSession({ sessionId: 's-1' });
`,
  'session.cts': `import hefesto = require('@hefesto/openai-agents');
import type { Session } from '@openai/agents-core';
const session: Session = new hefesto.HefestoSession({ baseUrl: 'http://localhost:8787', apiKey: 'key' });
void session;
// @ts-expect-error -- getItems takes a number
void session.getItems('ten');
`,
};

/** The URL and the first API key the server prints on its first start. */
const printed = async (server: ServerProcess): Promise<{ url: string; key: string }> => {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const out = server.output();
    const url = /Hefesto listening on (http:\/\/\S+)/.exec(out)?.[1];
    const key = /It is shown only this once; keep it:\n\s+(\S+)/.exec(out)?.[1];
    if (url && key) return { url, key };
    if (Date.now() > deadline) throw new Error(`no URL and key printed:\n${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

const timings: Record<string, number> = {};
const timed = async <T>(phase: string, step: () => Promise<T>): Promise<T> => {
  const started = performance.now();
  try {
    return await step();
  } finally {
    timings[phase] = Math.round(performance.now() - started);
  }
};

describe('installable packages', () => {
  const project = mkdtempSync(join(tmpdir(), 'hefesto-install-'));
  const dataDir = mkdtempSync(join(tmpdir(), 'hefesto-install-data-'));
  let server: ServerProcess | undefined;
  let api = { url: '', key: '' };
  let packed: string[] = [];

  beforeAll(async () => {
    const pack = await timed('npm run pack', () =>
      run('npm', ['run', '--silent', 'pack'], { cwd: REPO, env: outsideEnv() }),
    );
    packed = pack.stdout.trim().split('\n');
    writeFileSync(
      join(project, 'package.json'),
      `${JSON.stringify({ name: 'hefesto-install-check', private: true, type: 'module' })}\n`,
    );
    const flags = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];
    await timed('npm install', () =>
      run('npm', ['install', ...flags, ...TARBALLS], { cwd: project, env: outsideEnv() }),
    );
    for (const f of ['agent.mjs', 'agent.cjs']) copyFileSync(join(FIXTURES, f), join(project, f));
    server = await timed('server start', () =>
      startServer({ HEFESTO_DATA_DIR: dataDir, HEFESTO_API_KEY: '' }),
    );
    api = await printed(server);
  }, 180_000);

  /** The README's install line adds LangGraph itself (here at the versions this repo pins). */
  let langgraphInstalled: Promise<unknown> | undefined;
  const installLangGraph = () => {
    const pins = ['@langchain/langgraph', '@langchain/core'].map(
      (name) => `${name}@${ROOT.devDependencies[name]}`,
    );
    const flags = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];
    langgraphInstalled ??= timed('npm install langgraph', () =>
      run('npm', ['install', ...flags, ...pins], { cwd: project, env: outsideEnv() }),
    );
    return langgraphInstalled;
  };

  /** The README's OpenAI Agents line: the session's tarball and the SDK (pinned here). */
  let openaiInstalled: Promise<unknown> | undefined;
  const installOpenAI = () => {
    const pin = `@openai/agents-core@${ROOT.devDependencies['@openai/agents-core']}`;
    const flags = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];
    openaiInstalled ??= timed('npm install openai-agents', () =>
      run('npm', ['install', ...flags, OPENAI_TARBALL, pin], { cwd: project, env: outsideEnv() }),
    );
    return openaiInstalled;
  };

  afterAll(() => {
    server?.child.kill('SIGKILL');
    rmSync(project, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
    console.info(`[install.test] ms per phase: ${JSON.stringify(timings)}`);
  });

  it('installs in a project outside the repository', () => {
    expect(relative(REPO, project).startsWith('..')).toBe(true);
    expect(existsSync(join(project, 'node_modules/@hefesto/client/package.json'))).toBe(true);
  });

  describe('npm run pack', () => {
    it('writes hefesto-client-, hefesto-langgraph-, hefesto-openai-agents- and hefesto-embedded-<version>.tgz', () => {
      expect(packed).toEqual([...TARBALLS, OPENAI_TARBALL, EMBEDDED_TARBALL]);
      for (const tarball of packed) expect(existsSync(tarball)).toBe(true);
    });

    it("stamps the root package.json's versions into both packages", () => {
      const client = readManifest(join(project, 'node_modules/@hefesto/client'));
      const langgraph = readManifest(join(project, 'node_modules/@hefesto/langgraph'));
      expect(client.version).toBe(VERSION);
      expect(langgraph.version).toBe(VERSION);
      expect(client.dependencies).toEqual({
        canonicalize: ROOT.dependencies?.canonicalize,
        'fast-json-patch': ROOT.dependencies?.['fast-json-patch'],
      });
      expect(langgraph.dependencies).toEqual({ '@hefesto/client': VERSION });
      expect(langgraph.peerDependencies).toEqual({
        '@langchain/langgraph-checkpoint': `^${ROOT.devDependencies['@langchain/langgraph-checkpoint']}`,
      });
    });
  });

  describe('@hefesto/client', () => {
    it('ships one bundled module and one declaration file per format, nothing of the repository layout', () => {
      const files = packageFiles(join(project, 'node_modules/@hefesto/client'));
      expect(files.sort()).toEqual([
        'README.md',
        'cjs/index.d.ts',
        'cjs/index.js',
        'cjs/package.json',
        'esm/index.d.ts',
        'esm/index.js',
        'package.json',
      ]);
      const manifest = readFileSync(
        join(project, 'node_modules/@hefesto/client/package.json'),
        'utf8',
      );
      expect(manifest).not.toMatch(/shared\/|packages\//);
    });

    it('has typings that import nothing: no zod, no server module, no repository path', () => {
      for (const format of ['esm', 'cjs']) {
        const types = readFileSync(
          join(project, `node_modules/@hefesto/client/${format}/index.d.ts`),
          'utf8',
        );
        expect(types).not.toMatch(/^\s*(import|export)\b[^;]*\bfrom\s/m);
        expect(types).not.toMatch(/\bimport\(/);
        expect(types).not.toMatch(/zod|hono|shared\/|packages\//);
        expect(types).toContain('export declare class HefestoClient');
      }
    });

    it('depends on no server package', () => {
      const tree = dependencyTree(project, ['@hefesto/langgraph', '@hefesto/client']);
      expect(tree.filter(isServerModule)).toEqual([]);
      expect(tree).toEqual([
        '@hefesto/client',
        '@hefesto/langgraph',
        'canonicalize',
        'fast-json-patch',
      ]);
    });

    for (const format of ['esm', 'cjs'] as const) {
      it(`loads no server module from either entry (${format})`, async () => {
        // The peers (LangChain) are the user's own stack: left out of the graph.
        const graph = await importGraph(
          project,
          ['@hefesto/client', '@hefesto/langgraph'],
          format,
          ['@langchain/*'],
        );
        expect(graph.files.filter(isServerModule)).toEqual([]);
        expect(graph.external.filter(isServerModule)).toEqual([]);
        const ours = new RegExp(
          `^node_modules/(@hefesto/(client|langgraph)/${format}/|canonicalize/|fast-json-patch/)`,
        );
        expect(graph.files.filter((f) => !ours.test(f))).toEqual([]);
        expect(graph.external.filter((x) => !/^node:|^@langchain\//.test(x))).toEqual([]);
        expect(graph.files).toContain(`node_modules/@hefesto/client/${format}/index.js`);
      });
    }

    it('type-checks a TypeScript consumer against the installed types (ESM and CommonJS)', async () => {
      for (const [file, text] of Object.entries(CONSUMERS))
        writeFileSync(join(project, file), text);
      writeFileSync(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noEmit: true,
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
            types: [],
          },
          files: Object.keys(CONSUMERS),
        }),
      );
      const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
      const result = await timed('tsc consumer', () =>
        run(process.execPath, [tsc, '-p', project], { cwd: project, env: outsideEnv() }).then(
          () => 'ok',
          (err: { stdout?: string }) => err.stdout ?? String(err),
        ),
      );
      expect(result).toBe('ok');
    }, 90_000);
  });

  describe('an agent run by plain node from the installed packages', () => {
    const agent = async (file: string, stream: string) => {
      const env = outsideEnv({ HEFESTO_URL: api.url, HEFESTO_KEY: api.key, STREAM: stream });
      const { stdout } = await timed(file, () =>
        run(process.execPath, [file], { cwd: project, env }),
      );
      return JSON.parse(stdout) as Record<string, unknown>;
    };

    it('resumes, appends, checkpoints, replays, reads the state and verifies (ESM)', async () => {
      const out = await agent('agent.mjs', 'install-esm');
      const head = out.head as { seq: number; hash: string };
      expect(out).toMatchObject({
        langgraphExports: [
          'COPY_EVENT',
          'HefestoSaver',
          'HefestoStore',
          'MAX_GRAPH_EDGES',
          'MAX_GRAPH_NODES',
          'RESUME_EVENT',
          'StaleThreadError',
          'StoreIndexMissingError',
          'ThreadFencedError',
          'checkpointIdOf',
          'copyThread',
          'effectKeyOf',
          'effectTool',
          'graphShapeOf',
          'labelOf',
          'pendingResume',
          'requestResume',
          'streamIdOf',
          'threadPrefix',
        ],
        resumedAt: 3,
        callsBeforeReplay: 3,
        modelCalls: 3,
        replayTurn: 4,
        replayDigest: out.stateDigest,
        noteSeq: 5,
        stale: 'ErrDivergenceDetected',
        state: {
          t1: { role: 'assistant', text: 'answer 1' },
          t2: { role: 'assistant', text: 'answer 2' },
          t3: { role: 'assistant', text: 'answer 3' },
        },
        local: { ok: true, seq: head.seq, hash: head.hash },
        server: { ok: true, seq: head.seq, hash: head.hash },
        // State digest v2, computed by the packaged domain code, and a path proof checked.
        digestVersion: 2,
        v2Digest: out.stateDigest,
        proven: { role: 'assistant', text: 'answer 2' },
        // A 1.5 MiB value through putValue / readValue (canonical JSON: 11 bytes of framing).
        largeValue: { size: 1536 * 1024 + 11, equal: true },
      });
      // observation, delta (turn 1), observation, delta (turn 2), note, observation, delta.
      expect(head.seq).toBe(7);
    }, 60_000);

    it("runs the README's Install example (agent.mjs) exactly as written there, twice", async () => {
      const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
      const snippet =
        /<!-- agent-example:start -->\n```js\n([\s\S]*?)```\n<!-- agent-example:end -->/.exec(
          readme,
        )?.[1];
      expect(snippet).toBeDefined();
      // Only the server's address changes: http://localhost:8787 is the test server's.
      writeFileSync(
        join(project, 'readme-agent.mjs'),
        (snippet ?? '').replaceAll('http://localhost:8787', api.url),
      );
      const trust = mkdtempSync(join(tmpdir(), 'hefesto-install-readme-'));
      try {
        const env = outsideEnv({
          HEFESTO_KEY: api.key,
          HEFESTO_TRUST_FILE: join(trust, 'trusted-heads.json'),
        });
        const once = async () =>
          (
            await timed('readme-agent.mjs', () =>
              run(process.execPath, ['readme-agent.mjs'], { cwd: project, env }),
            )
          ).stdout;
        const first = await once();
        expect(first).toContain("turn1: { text: 'hello from turn 1' }");
        expect(first).toMatch(/\{\s*ok: true,\s*seq: \d+,\s*hash: '[0-9a-f]{64}'\s*\}/);
        // The second process resumes after the first one's checkpoint: turn 2.
        const second = await once();
        expect(second).toContain("turn1: { text: 'hello from turn 1' }");
        expect(second).toContain("turn2: { text: 'hello from turn 2' }");
        expect(second).toMatch(/\{\s*ok: true,\s*seq: \d+,\s*hash: '[0-9a-f]{64}'\s*\}/);
      } finally {
        rmSync(trust, { recursive: true, force: true });
      }
    }, 120_000);

    it("runs the README's LangGraph example exactly as written there", async () => {
      const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
      const snippet =
        /<!-- langgraph-example:start -->\n```js\n([\s\S]*?)```\n<!-- langgraph-example:end -->/.exec(
          readme,
        )?.[1];
      expect(snippet).toBeDefined();
      writeFileSync(join(project, 'graph.mjs'), snippet ?? '');
      await installLangGraph();
      const env = outsideEnv({ HEFESTO_URL: api.url, HEFESTO_KEY: api.key });
      const { stdout } = await timed('graph.mjs', () =>
        run(process.execPath, ['graph.mjs'], { cwd: project, env }),
      );
      expect(stdout.trim()).toBe("[ 'hello', 'you said: hello', 'again', 'you said: again' ]");
    }, 180_000);

    it("runs the README's store example twice: the second process reads what the first wrote", async () => {
      const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
      const snippet =
        /<!-- langgraph-store-example:start -->\n```js\n([\s\S]*?)```\n<!-- langgraph-store-example:end -->/.exec(
          readme,
        )?.[1];
      expect(snippet).toBeDefined();
      expect((snippet ?? '').trim().split('\n').length).toBeLessThanOrEqual(16);
      writeFileSync(
        join(project, 'memory.mjs'),
        (snippet ?? '').replaceAll('http://localhost:8787', api.url),
      );
      await installLangGraph();
      const env = outsideEnv({ HEFESTO_KEY: api.key });
      const once = async () =>
        (
          await timed('memory.mjs', () =>
            run(process.execPath, ['memory.mjs'], { cwd: project, env }),
          )
        ).stdout.trim();
      expect(await once()).toBe("hello ana, visit 1 [ [ 'users', 'ana' ] ]");
      expect(await once()).toBe("hello ana, visit 2 [ [ 'users', 'ana' ] ]");
    }, 180_000);

    it('runs the CommonJS entries with require()', async () => {
      const out = await agent('agent.cjs', 'install-cjs');
      expect(out).toMatchObject({
        langgraphExports: [
          'COPY_EVENT',
          'HefestoSaver',
          'HefestoStore',
          'MAX_GRAPH_EDGES',
          'MAX_GRAPH_NODES',
          'RESUME_EVENT',
          'StaleThreadError',
          'StoreIndexMissingError',
          'ThreadFencedError',
          'checkpointIdOf',
          'copyThread',
          'effectKeyOf',
          'effectTool',
          'graphShapeOf',
          'labelOf',
          'pendingResume',
          'requestResume',
          'streamIdOf',
          'threadPrefix',
        ],
        turn: 3,
        state: { list: ['a', 'b'] },
        harnessDigest: out.stateDigest,
        local: { ok: true },
      });
    }, 60_000);
  });

  describe('@hefesto/openai-agents', () => {
    it("stamps the root's versions: @hefesto/client its dependency, the SDK its peer", async () => {
      await installOpenAI();
      const manifest = readManifest(join(project, 'node_modules/@hefesto/openai-agents'));
      expect(manifest.version).toBe(VERSION);
      expect(manifest.dependencies).toEqual({ '@hefesto/client': VERSION });
      expect(manifest.peerDependencies).toEqual({
        '@openai/agents-core': `^${ROOT.devDependencies['@openai/agents-core']}`,
      });
      const files = packageFiles(join(project, 'node_modules/@hefesto/openai-agents'));
      const allowed =
        /^(package\.json|README\.md|cjs\/package\.json|(esm|cjs)\/[a-z0-9-]+\.(js|d\.ts))$/;
      expect(files.filter((f) => !allowed.test(f))).toEqual([]);
      expect(dependencyTree(project, ['@hefesto/openai-agents']).filter(isServerModule)).toEqual(
        [],
      );
    }, 120_000);

    it('type-checks TypeScript consumers against the installed types (ESM and CommonJS)', async () => {
      await installOpenAI();
      const dir = join(project, 'ts-openai-agents');
      mkdirSync(dir, { recursive: true });
      for (const [file, text] of Object.entries(SESSION_CONSUMERS))
        writeFileSync(join(dir, file), text);
      // skipLibCheck: the SDK's own declarations want @types/node and lib esnext (the user's
      // setup); the consumers are still checked against ours, and against the SDK's Session.
      const options = { strict: true, noEmit: true, skipLibCheck: true, types: [] };
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            ...options,
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
          },
          files: Object.keys(SESSION_CONSUMERS),
        }),
      );
      const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
      const result = await timed('tsc session consumer', () =>
        run(process.execPath, [tsc, '-p', dir], { cwd: dir, env: outsideEnv() }).then(
          () => 'ok',
          (err: { stdout?: string }) => err.stdout ?? String(err),
        ),
      );
      expect(result).toBe('ok');
    }, 90_000);

    it("runs the README's example with a real Runner, twice: the second process continues the session", async () => {
      const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
      const snippet =
        /<!-- openai-agents-example:start -->\n```js\n([\s\S]*?)```\n<!-- openai-agents-example:end -->/.exec(
          readme,
        )?.[1];
      expect(snippet).toBeDefined();
      writeFileSync(join(project, 'chat.mjs'), snippet ?? '');
      await installOpenAI();
      const env = outsideEnv({ HEFESTO_URL: api.url, HEFESTO_KEY: api.key });
      const once = async () =>
        (await timed('chat.mjs', () => run(process.execPath, ['chat.mjs'], { cwd: project, env })))
          .stdout;
      expect((await once()).trim()).toBe('answer 1 after 0 items');
      expect((await once()).trim()).toBe('answer 2 after 2 items');
    }, 120_000);

    it('runs a tool-calling turn from CommonJS, and another process continues it', async () => {
      await installOpenAI();
      copyFileSync(join(FIXTURES, 'session.cjs'), join(project, 'session.cjs'));
      const env = outsideEnv({ HEFESTO_URL: api.url, HEFESTO_KEY: api.key });
      const once = async (turn: string) =>
        JSON.parse(
          (
            await timed(`session.cjs ${turn}`, () =>
              run(process.execPath, ['session.cjs', turn], { cwd: project, env }),
            )
          ).stdout,
        ) as Record<string, unknown>;

      const first = await once('1');
      const second = await once('2');

      expect(first).toEqual({
        finalOutput: 'It is sunny in Paris.',
        toolCalls: ['Paris'],
        modelSaw: 1,
        types: ['message', 'function_call', 'function_call_result', 'message'],
      });
      expect(second).toEqual({
        finalOutput: 'You asked about Paris.',
        toolCalls: [],
        modelSaw: 5,
        types: [
          'message',
          'function_call',
          'function_call_result',
          'message',
          'message',
          'message',
        ],
      });
    }, 120_000);
  });

  describe('the code blocks of the package docs', () => {
    // Each document's blocks run in order against a server of their own (a fresh data
    // directory and trust file), so what they print does not depend on the other tests.
    const DOC_KEY = 'hk_install_docs_root_key_0123456789';
    for (const doc of [
      'packages/client/README.md',
      'packages/langgraph/README.md',
      'docs/langgraph.md',
      'docs/schema-evolution.md',
      'packages/openai-agents/README.md',
      'docs/openai-agents.md',
    ]) {
      it(`runs every block of ${doc} not marked "not run", verbatim, printing what it shows`, async () => {
        const blocks = docBlocks(readFileSync(join(REPO, doc), 'utf8'));
        expect(unaccounted(blocks)).toEqual([]);
        const runs = blocks.filter((b) => b.kind === 'run');
        expect(runs.length).toBeGreaterThan(0);
        await installLangGraph();
        await installOpenAI(); // after: two npm installs in one project at once would race
        const dir = mkdtempSync(join(tmpdir(), 'hefesto-install-docs-'));
        const docServer = await startServer({
          HEFESTO_DATA_DIR: join(dir, 'data'),
          HEFESTO_API_KEY: DOC_KEY,
        });
        try {
          const port = new URL(docServer.url).port;
          const env = outsideEnv({
            HEFESTO_KEY: DOC_KEY,
            HEFESTO_TRUST_FILE: join(dir, 'trusted-heads.json'),
          });
          const wrong: string[] = [];
          for (const block of runs) {
            const where = `${doc}:${block.line}`;
            // Only the port changes: http://localhost:8787 is the test server's.
            const code = block.code.replaceAll('http://localhost:8787', `http://localhost:${port}`);
            const file = `${doc.replace(/[/.]/g, '-')}-${block.line}.mjs`;
            writeFileSync(join(project, file), code);
            const out = await timed(where, () =>
              run(process.execPath, [file], { cwd: project, env }).then(
                ({ stdout }) => ({ stdout, failed: '' }),
                (err: { stderr?: string }) => ({ stdout: '', failed: err.stderr ?? String(err) }),
              ),
            );
            if (out.failed) wrong.push(`${where}: failed: ${out.failed.slice(0, 2000)}`);
            else if (block.output !== undefined)
              wrong.push(...outputErrors(block.output, out.stdout).map((e) => `${where}: ${e}`));
          }
          expect(wrong).toEqual([]);
        } finally {
          docServer.child.kill('SIGKILL');
          await docServer.exited;
          rmSync(dir, { recursive: true, force: true });
        }
      }, 180_000);
    }
  });

  embeddedInstallTests({
    repo: REPO,
    version: VERSION,
    pins: { ...ROOT.devDependencies, ...ROOT.dependencies },
    tarballs: () => [...TARBALLS, EMBEDDED_TARBALL],
    outsideEnv,
  });
});
