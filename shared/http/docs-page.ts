/**
 * The human docs page: plain HTML rendered on the server from the OpenAPI document, with
 * inline styles and no scripts or remote assets (the page must work with no internet).
 */

interface Media {
  schema?: unknown;
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: unknown;
}
interface Operation {
  summary?: string;
  description?: string;
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, Media> };
  responses?: Record<string, { description?: string; content?: Record<string, Media> }>;
}
interface Document {
  info: { title: string; version: string; description?: string };
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown> };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

const escapeHtml = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] ?? ch,
  );

const anchor = (text: string): string => text.replace(/[^A-Za-z0-9]+/g, '-').replace(/-$/, '');

/** Pretty JSON of a schema, with `$ref`s turned into links to the schema section. */
const schemaBlock = (schema: unknown): string => {
  const html = escapeHtml(JSON.stringify(schema, null, 2));
  return `<pre>${html.replace(
    /&quot;#\/components\/schemas\/([A-Za-z0-9_.-]+)&quot;/g,
    (_, name: string) => `<a href="#schema-${anchor(name)}">&quot;${escapeHtml(name)}&quot;</a>`,
  )}</pre>`;
};

const mediaBlocks = (content: Record<string, Media> | undefined): string =>
  Object.entries(content ?? {})
    .map(([type, media]) => `<p><code>${escapeHtml(type)}</code></p>${schemaBlock(media.schema)}`)
    .join('');

const parametersTable = (parameters: Parameter[]): string => {
  if (parameters.length === 0) return '';
  const rows = parameters
    .map(
      (p) =>
        `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td>` +
        `<td>${p.required ? 'yes' : 'no'}</td><td><code>${escapeHtml(JSON.stringify(p.schema ?? {}))}</code></td>` +
        `<td>${escapeHtml(p.description ?? '')}</td></tr>`,
    )
    .join('');
  return (
    '<h4>Parameters</h4><table><tr><th>Name</th><th>In</th><th>Required</th><th>Schema</th>' +
    `<th>Description</th></tr>${rows}</table>`
  );
};

const operationSection = (method: string, path: string, op: Operation): string => {
  const id = anchor(`${method}-${path}`);
  const auth = op.security?.length
    ? '<p class="auth">Needs <code>Authorization: Bearer &lt;key&gt;</code></p>'
    : '<p class="auth">Public</p>';
  const body = op.requestBody
    ? `<h4>Request body${op.requestBody.required ? '' : ' (optional)'}</h4>${mediaBlocks(op.requestBody.content)}`
    : '';
  const responses = Object.entries(op.responses ?? {})
    .map(
      ([status, r]) =>
        `<details><summary><b>${escapeHtml(status)}</b> ${escapeHtml(r.description ?? '')}</summary>` +
        `${mediaBlocks(r.content)}</details>`,
    )
    .join('');
  return (
    `<section id="${id}"><h3><span class="method ${method}">${method.toUpperCase()}</span> ` +
    `<code>${escapeHtml(path)}</code></h3><p>${escapeHtml(op.summary ?? '')}</p>` +
    `${op.description ? `<p>${escapeHtml(op.description)}</p>` : ''}${auth}` +
    `${parametersTable(op.parameters ?? [])}${body}<h4>Responses</h4>${responses}</section>`
  );
};

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
code,pre{font:13px ui-monospace,monospace}pre{background:#f5f5f5;padding:.75rem;overflow:auto}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ddd;padding:.3rem;text-align:left}
section{border-top:1px solid #ddd;margin-top:1.5rem}.auth{color:#555;font-size:13px}
.method{display:inline-block;min-width:4.5rem;color:#fff;border-radius:3px;padding:0 .4rem;font-size:13px}
.get{background:#2b6cb0}.post{background:#2f855a}.delete{background:#c53030}.put,.patch{background:#b7791f}
summary{cursor:pointer}`;

/** The whole page for one OpenAPI document. */
export const renderDocsPage = (openapi: unknown): string => {
  const doc = openapi as Document;
  const operations = Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m) => ({ method: m, path, op: item[m] as Operation })),
  );
  const toc = operations
    .map(
      ({ method, path, op }) =>
        `<li><a href="#${anchor(`${method}-${path}`)}"><span class="method ${method}">` +
        `${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></a> ${escapeHtml(op.summary ?? '')}</li>`,
    )
    .join('');
  const schemas = Object.entries(doc.components?.schemas ?? {})
    .map(
      ([name, schema]) =>
        `<section id="schema-${anchor(name)}"><h3>${escapeHtml(name)}</h3>${schemaBlock(schema)}</section>`,
    )
    .join('');
  const title = escapeHtml(`${doc.info.title} ${doc.info.version}`);
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>` +
    `<meta name="viewport" content="width=device-width,initial-scale=1"><style>${STYLE}</style>` +
    `</head><body><h1>${title}</h1><p>${escapeHtml(doc.info.description ?? '')}</p>` +
    '<p>Machine-readable: <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI 3.1)</p>' +
    `<h2>Endpoints</h2><ul>${toc}</ul>` +
    operations.map(({ method, path, op }) => operationSection(method, path, op)).join('') +
    `<h2>Schemas</h2>${schemas}</body></html>`
  );
};
