/**
 * The /docs page: Swagger UI (the `swagger-ui-dist` package, copied with content-hashed names
 * into the static build by console/build.ts) rendering /v1/openapi.json. The page itself is
 * three tags; the build's manifest names the files. Nothing is loaded from anywhere else.
 */

export interface DocsManifest {
  /** Asset names under /docs/assets/. */
  css: string;
  bundle: string;
  init: string;
  /** The library's version, shown in the page's generator tag. */
  version: string;
}

const escapeHtml = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] ?? ch,
  );

export const parseDocsManifest = (bytes: Uint8Array): DocsManifest => {
  const m = JSON.parse(new TextDecoder().decode(bytes)) as Partial<DocsManifest>;
  for (const field of ['css', 'bundle', 'init', 'version'] as const) {
    if (typeof m[field] !== 'string') throw new Error(`docs manifest lacks ${field}`);
  }
  return m as DocsManifest;
};

/** The page for one build; `title` is the OpenAPI document's title and version. */
export const renderDocsPage = (manifest: DocsManifest, title: string, openapiPath: string) => {
  const asset = (name: string) => `/docs/assets/${encodeURIComponent(name)}`;
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    `<title>${escapeHtml(title)}</title>` +
    '<meta name="viewport" content="width=device-width,initial-scale=1">' +
    `<meta name="generator" content="swagger-ui ${escapeHtml(manifest.version)}">` +
    `<link rel="stylesheet" href="${asset(manifest.css)}"></head><body>` +
    `<noscript><p>The reference needs JavaScript; the document itself is ` +
    `<a href="${escapeHtml(openapiPath)}">${escapeHtml(openapiPath)}</a>.</p></noscript>` +
    `<div id="swagger-ui" data-openapi="${escapeHtml(openapiPath)}"></div>` +
    `<script src="${asset(manifest.bundle)}"></script>` +
    `<script src="${asset(manifest.init)}"></script></body></html>`
  );
};
