import { STORAGE_KINDS } from '../../shared/chain/storage-kinds.js';
import {
  type Detection,
  MUTATIONS,
  type StorageKind,
} from '../../shared/chain/storage-kinds-model.js';

/**
 * The tables of docs/ledger-format.md, "Storage kinds and the tamper matrix", as the module
 * says them (test/unit/storage-kinds.test.ts compares them cell by cell). To print them after
 * a change to the module: `npx tsx test/support/storage-kinds-doc.ts` (then `npx biome check
 * --write docs/ledger-format.md` pads the columns).
 */

const code = (s: string) => `\`${s}\``;

/**
 * One cell, in the legend of the docs: R reads fail closed naming the object (or with the
 * error), V /verify names it, C a checkpoint on top is refused, S served as a history of its
 * own (by design), T the trust store refuses it (reason), W audit --witness fails, H harmless,
 * — cannot happen; the last two with a note.
 */
export const detectionCell = (d: Detection | string): string => {
  if (typeof d === 'string') return '— (note)';
  const parts: string[] = [];
  if (d.invisible) parts.push('S');
  if (d.read !== undefined) parts.push(`R ${d.read.startsWith('Err') ? d.read : code(d.read)}`);
  if (d.verify !== undefined) parts.push(`V ${code(d.verify)}`);
  if (d.refusesCheckpoint) parts.push('C');
  if (d.trustStore) parts.push(`T ${d.trustStore}`);
  if (d.witness) parts.push('W');
  if (d.harmless) parts.push('H (note)');
  return parts.join(', ');
};

/** The notes of the chain-bound table: why harmless, why it cannot happen. */
export const noteLines = (): string[] =>
  STORAGE_KINDS.flatMap((k) =>
    MUTATIONS.flatMap((m) => {
      const d = k.tamper?.[m];
      const note = typeof d === 'string' ? d : d?.harmless;
      return note === undefined ? [] : [`${code(k.name)} ${m}: ${note}`];
    }),
  );

const keyCell = (k: StorageKind) => `${code(k.key)}${k.store === 'witness' ? ' (witness)' : ''}`;

/** Rows of the chain-bound table: kind, key, one cell per mutation (a limit: see below). */
export const chainBoundRows = (): string[][] =>
  STORAGE_KINDS.filter((k) => k.class === 'chain-bound').map((k) => [
    k.name,
    keyCell(k),
    ...MUTATIONS.map((m) => (k.tamper ? detectionCell(k.tamper[m]) : 'limit')),
  ]);

/** Rows of the control and authority table: kind, class, key, outcome. */
export const sideRows = (): string[][] =>
  STORAGE_KINDS.filter((k) => k.class !== 'chain-bound').map((k) => [
    k.name,
    k.class,
    keyCell(k),
    k.outcome ?? '',
  ]);

export const CHAIN_BOUND_HEADER = [
  'kind',
  'key',
  'edit',
  'another stream’s',
  'another seq’s',
  'delete',
  'rollback',
];
export const SIDE_HEADER = ['kind', 'class', 'key', 'outcome of an edit or a deletion'];

/** The documented limits, one line each. */
export const limitLines = (): string[] =>
  STORAGE_KINDS.filter((k) => k.limit).map((k) => `${code(k.name)}: ${k.limit}`);

const table = (header: string[], rows: string[][]) =>
  [header, header.map(() => '---'), ...rows]
    .map((r) => `| ${r.map((c) => c.replaceAll('|', '\\|')).join(' | ')} |`)
    .join('\n');

/** The cells of every table row in `markdown` (header and separator rows included). */
export const tableRows = (markdown: string): string[][] =>
  markdown
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .map((l) =>
      l
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim().replaceAll('\\|', '|')),
    );

if (process.argv[1]?.endsWith('storage-kinds-doc.ts')) {
  console.log(table(CHAIN_BOUND_HEADER, chainBoundRows()));
  console.log();
  console.log(table(SIDE_HEADER, sideRows()));
  console.log();
  for (const line of noteLines()) console.log(`- ${line}`);
  console.log();
  for (const line of limitLines()) console.log(`- ${line}`);
}
