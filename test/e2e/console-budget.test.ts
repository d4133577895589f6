import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONSOLE_BUDGET_GZIP, gzippedSize } from '../../console/build.js';
import { STATIC_DIR } from '../../functions/wiring/embedded.js';

/**
 * The built console (dist/static/console, what the browser tests load) within its budget of
 * 300 KB gzipped, agent views and pictures included, and with no asset of another kind than
 * the CSP allows (scripts, one stylesheet, the favicon: no fonts, no data: images).
 */
describe('the console bundle', () => {
  it('is within its gzipped budget and holds the run views', () => {
    const dir = join(STATIC_DIR, 'console');
    const size = gzippedSize(dir);
    expect(size).toBeGreaterThan(0);
    expect(size).toBeLessThan(CONSOLE_BUDGET_GZIP);
    const assets = readdirSync(join(dir, 'assets')).filter((f) => !f.endsWith('.gz'));
    expect(assets.every((f) => /\.(js|css|svg)$/.test(f))).toBe(true);
    const js = assets
      .filter((f) => f.endsWith('.js'))
      .map((f) => readFileSync(join(dir, 'assets', f), 'utf8'))
      .join('\n');
    for (const text of ['Fork this run?', 'Resume this interrupt?', 'path-picture', 'lg.copy'])
      expect(js).toContain(text);
    expect(js).not.toMatch(/innerHTML\s*=|insertAdjacentHTML|document\.write\(/);
    process.stdout.write(`console bundle: ${(size / 1024).toFixed(1)} KB gzipped\n`);
  });
});
