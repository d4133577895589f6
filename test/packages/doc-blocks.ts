/**
 * The fenced code blocks of a Markdown document, each classified by the mark written on the
 * line right before its fence (blank lines between are allowed):
 *
 *   - no mark, language `js`: a program the install test runs verbatim with plain `node` in a
 *     project that installed the packages (only `http://localhost:8787`'s port is replaced by
 *     the test server's; the key comes from `HEFESTO_KEY`, as the docs say);
 *   - `<!-- output -->`: what the runnable block before it prints, checked line by line
 *     (`...` in a line stands for any text);
 *   - `<!-- not run: why -->`: shown, not run (a fragment, a shell session that needs AWS); the
 *     reason may not be empty;
 *   - anything else (an unmarked `sh` or `ts` block, an output block with nothing to run
 *     before it): a mistake, reported by {@link unaccounted}, and the install test fails.
 */

export type DocBlock =
  | { kind: 'run'; line: number; lang: string; code: string; output?: string }
  | { kind: 'not run'; line: number; lang: string; code: string; reason: string }
  | { kind: 'unaccounted'; line: number; lang: string; code: string; why: string };

const FENCE = /^(\s*)(`{3,})(\S*)\s*$/;
const NOT_RUN = /^<!--\s*not run:(.*?)-->$/;
const OUTPUT = /^<!--\s*output\s*-->$/;
const RUNNABLE = new Set(['js']);

export const docBlocks = (markdown: string): DocBlock[] => {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  let lastMark: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const fence = FENCE.exec(line);
    if (!fence) {
      if (line.trim() !== '') lastMark = line.trim();
      continue;
    }
    const [, indent = '', ticks = '', lang = ''] = fence;
    const start = i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && (lines[i] ?? '').trim() !== ticks; i++) {
      const text = lines[i] ?? '';
      body.push(text.startsWith(indent) ? text.slice(indent.length) : text);
    }
    const code = body.length > 0 ? `${body.join('\n')}\n` : '';
    const mark = lastMark;
    lastMark = undefined;
    const notRun = mark === undefined ? null : NOT_RUN.exec(mark);
    if (notRun) {
      const reason = (notRun[1] ?? '').trim();
      blocks.push(
        reason === ''
          ? { kind: 'unaccounted', line: start, lang, code, why: '"not run:" gives no reason' }
          : { kind: 'not run', line: start, lang, code, reason },
      );
    } else if (mark !== undefined && OUTPUT.test(mark)) {
      const before = blocks.at(-1);
      if (before?.kind === 'run' && before.output === undefined) before.output = code;
      else
        blocks.push({
          kind: 'unaccounted',
          line: start,
          lang,
          code,
          why: 'an output block with no runnable block right before it',
        });
    } else if (RUNNABLE.has(lang)) {
      blocks.push({ kind: 'run', line: start, lang, code });
    } else {
      blocks.push({
        kind: 'unaccounted',
        line: start,
        lang,
        code,
        why: `a \`${lang || 'plain'}\` block that is neither run nor marked <!-- not run: why -->`,
      });
    }
  }
  return blocks;
};

/** Where a document breaks the rules above: `line N: why`, empty when every block is accounted for. */
export const unaccounted = (blocks: DocBlock[]): string[] =>
  blocks.flatMap((b) => (b.kind === 'unaccounted' ? [`line ${b.line}: ${b.why}`] : []));

/**
 * Where `actual` (a program's stdout) departs from `expected` (an output block): the same
 * number of lines, each equal, `...` matching any text within its line.
 */
export const outputErrors = (expected: string, actual: string): string[] => {
  const want = expected.trimEnd().split('\n');
  const got = actual.trimEnd().split('\n');
  const errors: string[] = [];
  const matches = (pattern: string, text: string) =>
    new RegExp(
      `^${pattern
        .split('...')
        .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    ).test(text);
  for (let i = 0; i < Math.max(want.length, got.length); i++) {
    const w = want[i];
    const g = got[i];
    if (w === undefined) errors.push(`line ${i + 1}: unexpected ${JSON.stringify(g)}`);
    else if (g === undefined) errors.push(`line ${i + 1}: missing ${JSON.stringify(w)}`);
    else if (!matches(w.trimEnd(), g.trimEnd()))
      errors.push(`line ${i + 1}: ${JSON.stringify(w)} expected, got ${JSON.stringify(g)}`);
  }
  return errors;
};
