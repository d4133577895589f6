import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Context } from 'hono';
import { NotFoundError } from '../domain/errors.js';

/**
 * The console's and the docs' static files, built by `npm run build:console` into
 * `dist/static/` (console/build.ts): the console under `console/`, the OpenAPI reference
 * library under `docs/`, each file next to its `.gz`. The embedded server reads them from
 * the repository's `dist/static`; the Lambda from `static/` beside its handler (copied into
 * the function's asset at bundling, infra/bundling.ts). Files are read on first request and
 * kept in memory, so the API's cold start never touches them.
 *
 * Built names carry a content hash, so every file but the HTML entry is cached for a year.
 */

export interface StaticFile {
  body: Uint8Array;
  /** The same bytes gzipped at build time, when the build wrote them. */
  gzip?: Uint8Array;
  type: string;
}

export interface StaticAssets {
  /** `path` is relative to the static root, e.g. `console/index.html`; undefined if absent. */
  read(path: string): Promise<StaticFile | undefined>;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** A built asset's name: no directories, a known extension. */
export const ASSET_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.(js|css|svg|png|woff2)$/;

const typeOf = (path: string): string =>
  TYPES[path.slice(path.lastIndexOf('.'))] ?? 'application/octet-stream';

const readOptional = async (path: string): Promise<Buffer | undefined> => {
  try {
    return await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
};

/** Files under `root`, read once each and then served from memory. */
export const staticDirAssets = (root: string): StaticAssets => {
  const cache = new Map<string, Promise<StaticFile | undefined>>();
  const load = async (path: string): Promise<StaticFile | undefined> => {
    const body = await readOptional(join(root, path));
    if (!body) return undefined;
    const gzip = await readOptional(join(root, `${path}.gz`));
    return { body, type: typeOf(path), ...(gzip ? { gzip } : {}) };
  };
  return {
    read: (path) => {
      let file = cache.get(path);
      if (!file) {
        file = load(path);
        // A missing file is not cached: a build that lands later is served without a restart.
        file.then((f) => f ?? cache.delete(path)).catch(() => cache.delete(path));
        cache.set(path, file);
      }
      return file;
    },
  };
};

/** No static files (an app wired without them): the console and docs answer 404. */
export const noStaticAssets: StaticAssets = { read: async () => undefined };

export const IMMUTABLE = 'public, max-age=31536000, immutable';

const acceptsGzip = (c: Context): boolean => /\bgzip\b/.test(c.req.header('accept-encoding') ?? '');

/** The response for one static file; 404 ErrNotFound when it was not built. */
export const serveStatic = async (
  c: Context,
  assets: StaticAssets,
  path: string,
  headers: Record<string, string>,
): Promise<Response> => {
  const file = await assets.read(path);
  if (!file) {
    throw new NotFoundError(`${path} is not built: run npm run build:console`);
  }
  const gzip = file.gzip && acceptsGzip(c) ? file.gzip : undefined;
  const body = gzip ?? file.body;
  return new Response(body as Uint8Array<ArrayBuffer>, {
    status: 200,
    headers: {
      'Content-Type': file.type,
      'X-Content-Type-Options': 'nosniff',
      ...(file.gzip ? { Vary: 'Accept-Encoding' } : {}),
      ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
      ...headers,
    },
  });
};
