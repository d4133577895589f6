import { type Dirent, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where an object key lives on disk, relative to the objects directory.
 *
 * Each '/'-separated part of a key is a directory, except the last, which is a file whose name
 * ends in '#'. Keys never contain '#', '^' or '%' (see OBJECT_KEY_PATTERN), so the markers
 * cannot clash with key text, and keys `a` (file `a#`) and `a/b` (directory `a`, file `b#`)
 * can both exist, as they can in S3:
 * - a part longer than NAME_CHUNK chars (keys run to 1024 bytes, file names to 255) is split
 *   into directories ending in '^', meaning "this part goes on in the name below";
 * - an empty part ('a//b', 'a/') and the names '.' and '..' (possible as the tail of a split
 *   part) are escaped with a leading '%'.
 *
 *   'ledger/s1/000001.seg'  ->  ledger/s1/000001.seg#
 *   'a//b/'                 ->  a/%/b/%#
 */

const FILE = '#';
const MORE = '^';
const ESCAPE = '%';
const NAME_CHUNK = 200;
/** Characters a key may hold: a prefix with any other character matches no key. */
const KEY_CHARS = /^[A-Za-z0-9!_.*'()\-/=:@+]*$/;

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

/** Path segments of the file holding `key` (a key that passed checkObjectKey). */
export const keyToPath = (key: string): string[] => {
  const parts = key.split('/');
  return parts.flatMap((part, i) => partNames(part, i === parts.length - 1));
};

/**
 * Path segments of the deepest directory holding every key that starts with `prefix`, and the
 * key text that directory stands for; undefined when no key can start with `prefix`.
 */
export const prefixToDir = (prefix: string): { path: string[]; keyPrefix: string } | undefined => {
  if (!KEY_CHARS.test(prefix)) return undefined;
  const keyPrefix = prefix.slice(0, prefix.lastIndexOf('/') + 1);
  const parts = keyPrefix.split('/').slice(0, -1);
  return { path: parts.flatMap((part) => partNames(part, false)), keyPrefix };
};

/** Every key stored under `dir`, which stands for key text `keyPrefix`, in no order. */
export const keysUnder = (dir: string, keyPrefix: string, out: string[] = []): string[] => {
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
      out.push(keyPrefix + unescapeName(name.slice(0, -1)));
    } else if (entry.isDirectory()) {
      const text = name.endsWith(MORE) ? name.slice(0, -1) : `${unescapeName(name)}/`;
      keysUnder(join(dir, name), keyPrefix + text, out);
    }
  }
  return out;
};
