import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Reading the README's runnable parts: its sections, code blocks, commands and tables. */

export const README_PATH = join(import.meta.dirname, '../../README.md');

export const readme = (): string => readFileSync(README_PATH, 'utf8');

/** The text of the `## title` section, up to the next `## ` heading. */
export const section = (text: string, title: string): string => {
  const start = text.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README has no section "## ${title}"`);
  const end = text.indexOf('\n## ', start + 4);
  return text.slice(start, end < 0 ? undefined : end);
};

/** The fenced code blocks of `text` in the given language. */
export const codeBlocks = (text: string, lang: string): string[] =>
  [...text.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1] ?? '');

export interface Command {
  /** The command as written, continuation lines included. */
  text: string;
  /** The `# ...` sample answer written under it, if any. */
  sample: string | undefined;
}

/**
 * The shell commands of a block: a command runs on while its line ends with `\` or a single
 * quote is open; the comment lines right under it are its sample answer.
 */
export const commandsOf = (block: string): Command[] => {
  const commands: Command[] = [];
  let current: string[] = [];
  let open = false;
  for (const line of block.split('\n')) {
    if (current.length === 0 && /^\s*#/.test(line)) {
      const last = commands.at(-1);
      if (last)
        last.sample = [last.sample, line.replace(/^\s*#\s?/, '')].filter(Boolean).join('\n');
      continue;
    }
    if (current.length === 0 && line.trim() === '') continue;
    current.push(line);
    if ((line.match(/'/g) ?? []).length % 2 === 1) open = !open;
    if (!open && !line.endsWith('\\')) {
      commands.push({ text: current.join('\n'), sample: undefined });
      current = [];
    }
  }
  return commands;
};

const ANY_STRING = '...';
const ANY_OBJECT = '\u0000any object';

/**
 * Where `actual` departs from the shape of `sample`, a JSON text in which `"..."` stands for
 * any string and `{...}` for any object; the same keys in the same order are expected.
 */
export const shapeErrors = (sample: string, actual: unknown): string[] => {
  const expected = JSON.parse(sample.replaceAll('{...}', JSON.stringify(ANY_OBJECT))) as unknown;
  const errors: string[] = [];
  const walk = (want: unknown, got: unknown, at: string) => {
    if (want === ANY_OBJECT) {
      if (typeof got !== 'object' || got === null || Array.isArray(got))
        errors.push(`${at}: an object expected, got ${JSON.stringify(got)}`);
      return;
    }
    if (want === ANY_STRING) {
      if (typeof got !== 'string')
        errors.push(`${at}: a string expected, got ${JSON.stringify(got)}`);
      return;
    }
    if (typeof want === 'object' && want !== null) {
      if (typeof got !== 'object' || got === null) {
        errors.push(`${at}: ${JSON.stringify(want)} expected, got ${JSON.stringify(got)}`);
        return;
      }
      const wantKeys = Object.keys(want);
      const gotKeys = Object.keys(got);
      if (wantKeys.join() !== gotKeys.join())
        errors.push(`${at}: keys ${gotKeys.join(',')}, the sample has ${wantKeys.join(',')}`);
      for (const k of wantKeys)
        walk(
          (want as Record<string, unknown>)[k],
          (got as Record<string, unknown>)[k],
          `${at}/${k}`,
        );
      return;
    }
    if (want !== got)
      errors.push(`${at}: ${JSON.stringify(want)} expected, got ${JSON.stringify(got)}`);
  };
  walk(expected, actual, '');
  return errors;
};

/** The rows of the first Markdown table under `heading`'s section: cells of each line. */
export const tableRows = (text: string): string[][] =>
  text
    .split('\n')
    .filter((line) => /^\|.*\|$/.test(line.trim()) && !/^\|[\s|:-]+\|$/.test(line.trim()))
    .map((line) =>
      line
        .trim()
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
