import type { Exchange, Failure } from './runner.js';

/** Failures and exchanges as text, for the test's messages and HEFESTO_FUZZ_DEBUG. */

const clip = (s: string | undefined, n = 400) =>
  s === undefined ? '' : s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s;

/** A failure as a few readable lines (the key's secret left out). */
export const describeFailure = (f: Failure): string => {
  const { authorization: _, ...headers } = f.request.headers;
  return [
    `${f.kind}: ${f.detail}`,
    `  ${f.request.method} ${clip(f.request.url, 200)}   [${f.request.op}, intent ${f.request.intent}, key ${f.request.key}]`,
    `  headers ${JSON.stringify(headers)}`,
    f.request.body === undefined ? '  no body' : `  body ${clip(f.request.body)}`,
    `  -> ${f.status} ${clip(f.response)}`,
  ].join('\n');
};

/** An exchange in one line (HEFESTO_FUZZ_DEBUG=1 prints every one). */
export const describeExchange = (e: Exchange): string =>
  `[fuzz] ${e.status} ${e.code ?? ''} ${e.request.method} ${clip(e.request.url, 120)} ` +
  `(${e.request.intent}, ${e.request.key}) ${clip(e.detail, 200)}`;
