import { type Dirent, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Object layout 1, frozen: how data directories written before LAYOUT existed map keys to
 * files. Only the migration (object-layout.ts) reads it; nothing writes it any more.
 *
 * Each '/'-separated part of a key is a directory, except the last, which is a file whose name
 * ends in '#'. A part longer than 200 chars is split into directories ending in '^' ("goes on
 * below"); an empty part and the names '.' and '..' get a leading '%'. Key text is used as it
 * is, so `TENA` and `tena`, or `a.` and `a`, are one name on a case-insensitive or Windows file
 * system: the reason for layout 2 (object-paths.ts).
 */

const FILE = '#';
const MORE = '^';
const ESCAPE = '%';
const NAME_CHUNK = 200;

const escapeName = (name: string) =>
  name === '' || name === '.' || name === '..' ? ESCAPE + name : name;
const unescapeName = (name: string) => (name.startsWith(ESCAPE) ? name.slice(1) : name);

const partNames = (part: string, isFile: boolean): string[] => {
  const names: string[] = [];
  let rest = part;
  for (; rest.length > NAME_CHUNK; rest = rest.slice(NAME_CHUNK)) {
    names.push(rest.slice(0, NAME_CHUNK) + MORE);
  }
  names.push(escapeName(rest) + (isFile ? FILE : ''));
  return names;
};

/** Path segments of the file holding `key` in layout 1 (tests build old directories with it). */
export const keyToPathV1 = (key: string): string[] => {
  const parts = key.split('/');
  return parts.flatMap((part, i) => partNames(part, i === parts.length - 1));
};

export interface StoredFile {
  key: string;
  /** Path segments relative to the objects directory. */
  path: string[];
}

/** Every object file of a layout-1 tree under `dir`, standing for key text `keyPrefix`. */
export const filesUnderV1 = (
  dir: string,
  keyPrefix = '',
  path: string[] = [],
  out: StoredFile[] = [],
): StoredFile[] => {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
    throw err;
  }
  for (const entry of entries) {
    const { name } = entry;
    if (entry.isFile() && name.endsWith(FILE)) {
      out.push({ key: keyPrefix + unescapeName(name.slice(0, -1)), path: [...path, name] });
    } else if (entry.isDirectory()) {
      const text = name.endsWith(MORE) ? name.slice(0, -1) : `${unescapeName(name)}/`;
      filesUnderV1(join(dir, name), keyPrefix + text, [...path, name], out);
    }
  }
  return out;
};
