import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a JavaScript module without types (scripts/check-imports.mjs)
import { ALLOWED, ROOMS } from '../../scripts/check-imports.mjs';

// docs/architecture.md and each room's README.md draw the table the import checker enforces;
// these keep the drawing and the table the same.
const repo = join(dirname(fileURLToPath(import.meta.url)), '../..');
const allowed = ALLOWED as Record<string, string[]>;
const rooms = ROOMS as Record<string, string>;
const listOf = (text: string) =>
  text.trim().replace(/\.$/, '') === 'nothing of ours'
    ? []
    : text
        .split(',')
        .map((s) => s.replace(/[`.]/g, '').trim())
        .filter(Boolean);

describe('docs/architecture.md and the rooms', () => {
  it('lists, for every room of shared/, exactly what the checker allows it to import', () => {
    const doc = readFileSync(join(repo, 'docs/architecture.md'), 'utf8');
    const rows = new Map<string, string[]>();
    for (const line of doc.split('\n')) {
      const m = line.match(/^\| `([a-z]+)\/` +\|.*\|(.*)\|$/);
      if (m) rows.set(m[1] as string, listOf(m[2] as string));
    }
    const shared = Object.entries(rooms)
      .filter(([prefix]) => prefix.startsWith('shared/'))
      .map(([, room]) => room);
    expect([...rows.keys()].sort()).toEqual([...shared].sort());
    for (const [room, list] of rows)
      expect([room, list.sort()]).toEqual([room, [...(allowed[room] ?? [])].sort()]);
  });

  it('has every folder of shared/ as a room, with a README saying what it may import', () => {
    const folders = readdirSync(join(repo, 'shared'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    for (const folder of folders) {
      const room = rooms[`shared/${folder}/`];
      expect(room, `shared/${folder}/ is in check-imports.mjs ROOMS`).toBeDefined();
      const readme = join(repo, 'shared', folder, 'README.md');
      expect(existsSync(readme), `${readme} exists`).toBe(true);
      const m = readFileSync(readme, 'utf8').match(/May import \([^)]*\): ([^\n]*)/);
      expect(m, `${readme} has a "May import" line`).not.toBeNull();
      expect([folder, listOf((m as RegExpMatchArray)[1] as string).sort()]).toEqual([
        folder,
        [...(allowed[room as string] ?? [])].sort(),
      ]);
    }
    for (const prefix of Object.keys(rooms).filter((p) => p.startsWith('shared/'))) {
      expect(existsSync(join(repo, prefix)), `${prefix} exists`).toBe(true);
    }
  });
});
