import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  codeBlocks,
  commandsOf,
  readme,
  section,
  shapeErrors,
  tableRows,
} from '../support/readme.js';
import { serverForSuite } from '../support/server-suite.js';

/**
 * The README's runnable parts against the embedded server. The "Try it" block, run as written by bash against the embedded server started as
 * `npm start` starts it (a process of functions/server.ts on a fresh data directory): only
 * the port (8787 -> the test's) and the key (`hk_...` -> the server's) are replaced. Each
 * command's output must have the shape of the sample answer written under it.
 */

const run = promisify(execFile);
const KEY = 'hk_readme_try_it_root_key_0123456789';

const block = () => {
  const blocks = codeBlocks(section(readme(), 'Try it'), 'sh');
  expect(blocks).toHaveLength(1);
  return blocks[0] ?? '';
};

describe("README's Try it", () => {
  const server = serverForSuite('hefesto-try-it-', KEY);

  it('sets KEY first, then has a sample answer under every command', () => {
    const commands = commandsOf(block());

    expect(commands[0]?.text).toMatch(/^KEY=hk_\.\.\. /);
    expect(commands.length).toBeGreaterThanOrEqual(5);
    expect(commands.slice(1).filter((c) => c.sample === undefined)).toEqual([]);
  });

  it('runs verbatim against the embedded server, each answer shaped like its sample', async () => {
    const port = new URL(server.url).port;
    const [assignment, ...commands] = commandsOf(
      block().replaceAll('localhost:8787', `localhost:${port}`),
    );
    const setKey = (assignment?.text ?? '').replace('hk_...', KEY);
    expect(setKey).toContain(`KEY=${KEY}`);

    const wrong: string[] = [];
    for (const command of commands) {
      const { stdout } = await run('bash', [
        '-euo',
        'pipefail',
        '-c',
        `${setKey}\n${command.text}`,
      ]);
      let answer: unknown;
      try {
        answer = JSON.parse(stdout);
      } catch {
        wrong.push(`${command.text.split('\n')[0]}: not JSON: ${stdout.slice(0, 200)}`);
        continue;
      }
      for (const e of shapeErrors(command.sample ?? 'null', answer))
        wrong.push(`${command.text.split('\n')[0]}: ${e}`);
    }
    expect(wrong).toEqual([]);
  });
});

/**
 * The operations a cell of the README's API table names: backticked pieces like
 * `POST /v1/x`, `GET`, `PUT /v1/y` (methods carried to the next path) or `/z` (the last
 * method again); a query string is dropped, and path parameters compare by position only.
 */
const operationsOfCell = (cell: string): string[] => {
  const ops: string[] = [];
  let methods: string[] = [];
  let pending: string[] = [];
  for (const [, piece = ''] of cell.matchAll(/`([^`]+)`/g)) {
    const m = /^(GET|POST|PUT|DELETE|PATCH)(?: (\/\S*))?$/.exec(piece);
    const path = m ? m[2] : piece.startsWith('/') ? piece : undefined;
    if (m) pending.push(m[1] ?? '');
    if (path === undefined) continue;
    if (pending.length > 0) methods = pending;
    pending = [];
    for (const method of methods) ops.push(`${method} ${path.replace(/\?.*$/, '')}`);
  }
  return ops;
};

const normalize = (op: string) => op.replace(/\{[^}]+\}/g, '{}');

describe("README's API table", () => {
  const server = serverForSuite('hefesto-api-table-', KEY);

  it("names every operation of the embedded server's OpenAPI document, and no other", async () => {
    const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => normalize(`${method.toUpperCase()} ${path}`)),
    );
    const rows = tableRows(
      section(readme(), 'API')
        .split('\n\n')
        .find((p) => p.startsWith('| route')) ?? '',
    );
    const inTable = rows.slice(1).flatMap(([cell = '']) => operationsOfCell(cell).map(normalize));

    expect(rows.length).toBeGreaterThan(20);
    expect(documented.filter((op) => !inTable.includes(op))).toEqual([]);
    expect(inTable.filter((op) => !documented.includes(op))).toEqual([]);
    expect(new Set(inTable).size).toBe(inTable.length);
  });
});
