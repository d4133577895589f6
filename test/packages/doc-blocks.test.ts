import { describe, expect, it } from 'vitest';
import { docBlocks, outputErrors, unaccounted } from './doc-blocks.js';

/** The rules the install test applies to the package docs' code blocks (doc-blocks.ts). */

const md = (...parts: string[]) => parts.join('\n');

describe('docBlocks', () => {
  it('runs an unmarked js block and attaches the output block after it', () => {
    const blocks = docBlocks(
      md(
        'Intro.',
        '',
        '```js',
        "console.log('hi');",
        '```',
        '',
        'It prints:',
        '',
        '<!-- output -->',
        '```text',
        'hi',
        '```',
      ),
    );
    expect(blocks).toEqual([
      { kind: 'run', line: 3, lang: 'js', code: "console.log('hi');\n", output: 'hi\n' },
    ]);
    expect(unaccounted(blocks)).toEqual([]);
  });

  it('keeps a block marked not run, with its reason', () => {
    const blocks = docBlocks(
      md('<!-- not run: needs AWS credentials -->', '', '```sh', 'npm run deploy', '```'),
    );
    expect(blocks).toEqual([
      {
        kind: 'not run',
        line: 3,
        lang: 'sh',
        code: 'npm run deploy\n',
        reason: 'needs AWS credentials',
      },
    ]);
    expect(unaccounted(blocks)).toEqual([]);
  });

  it('reports a block that is neither run nor marked', () => {
    const blocks = docBlocks(
      md('Deploy:', '```sh', 'npm run deploy', '```', '```ts', 'let x = 1;', '```'),
    );
    expect(unaccounted(blocks)).toEqual([
      'line 2: a `sh` block that is neither run nor marked <!-- not run: why -->',
      'line 5: a `ts` block that is neither run nor marked <!-- not run: why -->',
    ]);
  });

  it('reports a not-run mark without a reason and an output block with nothing before it', () => {
    const blocks = docBlocks(
      md('<!-- not run: -->', '```js', 'x', '```', '<!-- output -->', '```text', 'y', '```'),
    );
    expect(unaccounted(blocks)).toEqual([
      'line 2: "not run:" gives no reason',
      'line 6: an output block with no runnable block right before it',
    ]);
  });

  it('reads a mark only on the line right before the fence', () => {
    const blocks = docBlocks(
      md('<!-- not run: a fragment -->', 'Some prose.', '```js', 'x', '```'),
    );
    expect(blocks[0]?.kind).toBe('run');
  });

  it('reads an indented fence (in a list item) without its indent', () => {
    const blocks = docBlocks(md('- step:', '  ```js', '  a();', '    b();', '  ```'));
    expect(blocks).toEqual([{ kind: 'run', line: 2, lang: 'js', code: 'a();\n  b();\n' }]);
  });
});

describe('outputErrors', () => {
  it('matches line by line, "..." standing for any text within a line', () => {
    expect(outputErrors('2 { last: ... }\nok\n', "2 { last: 'reply 1' }\nok\n")).toEqual([]);
    expect(outputErrors('a ... b', 'a  b')).toEqual([]);
  });

  it('names the lines that differ, are missing or are extra', () => {
    expect(outputErrors('one\ntwo', 'one\nTWO\nthree')).toEqual([
      'line 2: "two" expected, got "TWO"',
      'line 3: unexpected "three"',
    ]);
    expect(outputErrors('one\ntwo', 'one')).toEqual(['line 2: missing "two"']);
    expect(outputErrors('a.c', 'abc')).toEqual(['line 1: "a.c" expected, got "abc"']);
  });
});
