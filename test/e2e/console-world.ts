import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { createEmbedded, STATIC_DIR } from '../../functions/wiring/embedded.js';
import { LocalRecordStore } from '../../shared/adapters/local/local-record-store.js';
import { parseSettings } from '../../shared/config/settings.js';
import { LeaseService } from '../../shared/leases/leases.js';
import type { Clock } from '../../shared/ports/clock.js';

/**
 * The embedded server (real wiring: local stores in a temp directory, the built static
 * files) on an ephemeral port, and Debian's Chromium driven by playwright-core, for the
 * console's end-to-end tests. The test command builds the assets and installs Chromium
 * (console/prepare-test.sh); without them these tests fail and say how to get them.
 */

export const CHROMIUM = '/usr/bin/chromium';
export const ROOT_KEY = 'console-e2e-root-key-0123456789abcdef';
export const ARTIFACTS = join(process.cwd(), 'artifacts', 'console');

/** No network beyond loopback on our machines: without these Chromium keeps trying. */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface ConsoleWorld {
  base: string;
  dataDir: string;
  /** A read/write key of tenant acme, made with the root key. */
  key: string;
  request(
    path: string,
    init?: { key?: string; body?: unknown; method?: string },
  ): Promise<Response>;
  /**
   * Step 1 of a drain (the lease marked draining), as a worker's drain leaves it while it
   * waits for quiet: over the HTTP API a drain runs to its end and releases the lease.
   */
  markDraining(stream: string, owner: string, epoch: number): Promise<void>;
  /** Moves the server's clock on by `ms` (it starts at the system clock's time). */
  advance(ms: number): void;
  close(): Promise<void>;
}

export const startConsoleWorld = async (): Promise<ConsoleWorld> => {
  if (!existsSync(join(STATIC_DIR, 'console', 'index.html'))) {
    throw new Error('console assets are not built: run npm run build:console');
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'hefesto-console-'));
  // The system clock, moved on by `advance`: a lease lapses without the test waiting for it.
  let offset = 0;
  const clock: Clock = { now: () => Date.now() + offset };
  const embedded = createEmbedded(
    parseSettings({
      HEFESTO_DATA_DIR: dataDir,
      HEFESTO_API_KEY: ROOT_KEY,
      HEFESTO_LOG_LEVEL: 'silent',
      HEFESTO_COMPACT_INTERVAL_MS: '0',
    }),
    { clock },
  );
  const server = createAdaptorServer({ fetch: embedded.app.fetch }) as Server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const request = (path: string, init: { key?: string; body?: unknown; method?: string } = {}) =>
    fetch(`${base}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: {
        authorization: `Bearer ${init.key ?? ROOT_KEY}`,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  const created = await request('/v1/keys', {
    body: { tenant: 'acme', scopes: ['read', 'write'] },
  });
  const { key } = (await created.json()) as { key: string };
  return {
    base,
    dataDir,
    key,
    request,
    markDraining: async (stream, owner, epoch) => {
      const records = new LocalRecordStore({ path: join(dataDir, 'objects.sqlite') });
      try {
        await new LeaseService({ records, clock }).markDraining('acme', stream, owner, epoch);
      } finally {
        records.close();
      }
    },
    advance: (ms) => {
      offset += ms;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      embedded.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
};

export interface Browser {
  context: BrowserContext;
  /** A new page that records CSP violations and page errors. */
  page(): Promise<Page & { problems: string[] }>;
  close(): Promise<void>;
}

export const launchBrowser = async (): Promise<Browser> => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: apt-get install -y --no-install-recommends chromium ` +
        '(the test command does it as root)',
    );
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  // A fresh profile each run: no state from an earlier run can leak in.
  const profile = mkdtempSync(join(tmpdir(), 'hefesto-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
  });
  return {
    context,
    page: async () => {
      const page = (await context.newPage()) as Page & { problems: string[] };
      page.problems = [];
      page.on('pageerror', (err) => page.problems.push(`pageerror: ${err.message}`));
      page.on('console', (msg) => {
        if (msg.type() === 'error' && /Content.Security.Policy|Trusted Type/i.test(msg.text())) {
          page.problems.push(`csp: ${msg.text()}`);
        }
      });
      // Runs in the page (a string: this file is typed for Node, not the DOM).
      await page.addInitScript({
        content: `document.addEventListener('securitypolicyviolation', (e) =>
          console.error('Content Security Policy violation: ' + e.violatedDirective + ' ' + e.blockedURI));`,
      });
      return page;
    },
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
};

export const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: false });
