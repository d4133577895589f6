import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../../shared/http/routes/console.js';
import merkle from '../vectors/merkle.json' with { type: 'json' };
import signed from '../vectors/signed-heads.json' with { type: 'json' };
import { type Browser, launchBrowser } from './console-world.js';

/**
 * The console's proof checks (console/src/proofs.ts over the WebCrypto hash port) run in
 * Chromium, under the console's own Content-Security-Policy, against the project's vectors:
 * every inclusion and consistency proof of test/vectors/merkle.json and every signed head of
 * test/vectors/signed-heads.json, each also edited by one hex digit and refused.
 */

const ORIGIN = 'http://localhost'; // a secure context (WebCrypto), answered by page.route

describe('console proof checks in Chromium', () => {
  let b: Browser;
  let script: string;
  beforeAll(async () => {
    b = await launchBrowser();
    const out = await build({
      stdin: {
        contents:
          "export * from './console/src/proofs.ts';\n" +
          "export { webCryptoHash } from './shared/domain/hash-port.ts';\n",
        resolveDir: process.cwd(),
        loader: 'ts',
      },
      bundle: true,
      format: 'iife',
      globalName: 'hefestoProofs',
      target: 'es2022',
      write: false,
      logLevel: 'error',
    });
    script = out.outputFiles[0]?.text ?? '';
  }, 60_000);
  afterAll(async () => {
    await b?.close();
  });

  it('accepts every vector and refuses each edited one', async () => {
    const page = await b.page();
    await page.route(`${ORIGIN}/**`, (route) => {
      const js = route.request().url().endsWith('.js');
      return route.fulfill({
        status: 200,
        headers: {
          'content-type': js ? 'text/javascript' : 'text/html',
          'content-security-policy': CONSOLE_CSP,
        },
        body: js
          ? script
          : '<!doctype html><title>proofs</title><script src="/proofs.js"></script>',
      });
    });
    await page.goto(`${ORIGIN}/proofs.html`);

    // In the page (a string: this file is typed for Node, not the DOM).
    const result = await page.evaluate<{ checked: number; wrong: string[]; userAgent: string }>(
      `(async ({ merkle, signed }) => {
        const p = globalThis.hefestoProofs;
        const port = p.webCryptoHash;
        const flip = (h) => (h[0] === '0' ? '1' : '0') + h.slice(1);
        const wrong = [];
        let checked = 0;
        const expect = async (what, promise, want) => {
          checked++;
          if ((await promise) !== want) wrong.push(what + ' should be ' + want);
        };
        for (const q of merkle.inclusion) {
          const e = merkle.entries[q.leafIndex];
          const r = merkle.roots[q.treeSize];
          const at = 'inclusion ' + q.leafIndex + '/' + q.treeSize;
          await expect(at, p.verifyInclusion(port, e, q, r), true);
          await expect(at + ' edited leaf', p.verifyInclusion(port, flip(e), q, r), false);
          await expect(at + ' edited root', p.verifyInclusion(port, e, q, flip(r)), false);
          if (q.path.length > 0) {
            const path = [flip(q.path[0]), ...q.path.slice(1)];
            await expect(at + ' edited path', p.verifyInclusion(port, e, { ...q, path }, r), false);
          }
        }
        for (const q of merkle.consistency) {
          const a = merkle.roots[q.from];
          const z = merkle.roots[q.to];
          const at = 'consistency ' + q.from + '->' + q.to;
          await expect(at, p.verifyConsistency(port, q, a, z), true);
          if (q.from > 0) await expect(at + ' edited old root', p.verifyConsistency(port, q, flip(a), z), false);
          if (q.path.length > 0) {
            const path = [flip(q.path[0]), ...q.path.slice(1)];
            await expect(at + ' edited path', p.verifyConsistency(port, { ...q, path }, a, z), false);
          }
        }
        const key = signed.testKey.publicJwk;
        for (const { head } of signed.heads) {
          const at = 'head ' + head.treeSize;
          await expect(at, p.verifyTreeHead(head, key), true);
          await expect(at + ' edited root', p.verifyTreeHead({ ...head, rootHash: flip(head.rootHash) }, key), false);
          await expect(at + ' parses', Promise.resolve(typeof p.parseTreeHead(head) === 'object'), true);
        }
        return { checked, wrong, userAgent: navigator.userAgent };
      })(${JSON.stringify({ merkle, signed })})`,
    );

    expect(result.userAgent).toContain('Chrome');
    expect(result.wrong).toEqual([]);
    expect(result.checked).toBeGreaterThan(merkle.inclusion.length * 3);
    expect(page.problems).toEqual([]);
  });
});
