import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { UnavailableError } from '../../domain/errors.js';
import { OBJECT_KEY_PATTERN } from '../../ports/object-store.js';
import { fsyncDir, mkdirDurable } from './durable-fs.js';
import { copyFilesToDb } from './object-layout-v3.js';
import { keyToPath } from './object-paths.js';
import { filesUnderV1 } from './object-paths-v1.js';
import { OBJECTS_DB } from './objects-db.js';

/**
 * The object layout of a data directory is recorded in its `LAYOUT` file (the version, one
 * line). No LAYOUT file: layout 1, what every version before it wrote (object-paths-v1.ts).
 * Layout 2 is a file per object at names no file system merges (object-paths.ts); layout 3,
 * what this code writes, keeps objects as rows of `objects.sqlite` (objects-db.ts). Opening a
 * data directory (under its lock) moves it to layout 3 first. Going back is not supported: a
 * version that reads an older layout refuses a newer one.
 *
 * From layout 1 to 2, and what a crash after each step leaves for the next open:
 *   1. remove a half-built `objects.next/` (a crash during this step), then hard-link every
 *      layout-1 file of `objects/` into `objects.next/` at its layout-2 path and fsync every
 *      directory made. No byte is copied, and `objects/` is not touched.
 *      Crash: still layout 1 (no LAYOUT); the next open starts again at 1.
 *   2. write LAYOUT = 2 (temp file, fsync, rename, fsync the directory): the commit point.
 *      From here on, `objects.next/`, while it exists, is the complete layout-2 tree.
 *   3. rename `objects/` to `objects.v1/`;
 *   4. rename `objects.next/` to `objects/` and fsync the data directory.
 *      Crash after 2, 3 or 4: the next open sees LAYOUT = 2 and finishes 3 to 5.
 *   5. remove `objects.v1/`.
 * From layout 2 to 3:
 *   6. copy every object of `objects/` into a new `objects.sqlite.next` in one transaction
 *      (object-layout-v3.ts), close it, fsync the data directory. `objects/` is not touched.
 *      Crash: still layout 2; the next open builds it again from the start.
 *   7. write LAYOUT = 3: the commit point. From here on `objects.sqlite.next`, while it
 *      exists, is the complete layout-3 database.
 *   8. rename `objects.sqlite.next` to `objects.sqlite` and fsync the data directory;
 *   9. remove `objects/` (and `tmp/`, layout 2's temp files).
 *      Crash after 7, 8 or 9: the next open sees LAYOUT = 3 and finishes 8 and 9.
 * A new data directory goes straight to step 6 with nothing to copy.
 *
 * `onStep` observes the move (tests kill the process at each step to check the above).
 */

export const CURRENT_LAYOUT = 3;

export type LayoutStep =
  | 'linked'
  | 'built'
  | 'committed'
  | 'moved-old'
  | 'moved-new'
  | 'copied'
  | 'db-built'
  | 'db-committed'
  | 'db-moved'
  | 'done';

export interface LayoutResult {
  /** Set when this open moved the directory from an older layout. */
  migrated?: { from: 1 | 2; objects: number };
}

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;

const readLayout = (path: string): number => {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (errno(err) === 'ENOENT') return 1;
    throw err;
  }
  const version = Number(text.trim());
  if (!Number.isInteger(version) || version < 1) {
    throw new UnavailableError(`${path} does not hold a layout version: ${JSON.stringify(text)}`);
  }
  return version;
};

const writeDurably = (path: string, text: string): void => {
  const tmp = `${path}.new`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  fsyncDir(dirname(path));
};

/** Step 1: the layout-2 tree of `from` (layout 1), made of hard links, fsynced, at `to`. */
const buildTree = (from: string, to: string, onStep: (step: LayoutStep) => void): number => {
  rmSync(to, { recursive: true, force: true });
  mkdirDurable(to);
  const touched = new Set<string>([to]);
  let objects = 0;
  for (const file of filesUnderV1(from)) {
    // Not an object (no valid key decodes from its path): a stray file, left behind.
    if (!OBJECT_KEY_PATTERN.test(file.key)) continue;
    const target = join(to, ...keyToPath(file.key));
    mkdirDurable(dirname(target));
    linkSync(join(from, ...file.path), target);
    touched.add(dirname(target));
    objects++;
    onStep('linked');
  }
  // A link's directory entry is durable once its directory is fsynced (mkdirDurable made
  // the directories themselves durable in their parents).
  for (const dir of touched) fsyncDir(dir);
  return objects;
};

/** Brings data directory `dir` (locked by the caller) to CURRENT_LAYOUT. */
export const ensureLayout = (
  dir: string,
  onStep: (step: LayoutStep) => void = () => {},
): LayoutResult => {
  const layoutFile = join(dir, 'LAYOUT');
  const objects = join(dir, 'objects');
  const result: LayoutResult = {};

  let version = readLayout(layoutFile);
  if (version > CURRENT_LAYOUT) {
    throw new UnavailableError(
      `data dir ${dir} has object layout ${version}, written by a newer Hefesto; this one ` +
        `reads layout ${CURRENT_LAYOUT}`,
    );
  }
  // A new data directory (no LAYOUT, no objects): nothing to move to layout 2.
  if (version === 1 && !existsSync(objects)) version = 2;
  if (version === 1) {
    const count = toLayout2(dir, onStep);
    version = 2;
    result.migrated = { from: 1, objects: count };
  }
  if (version === 2) {
    finishLayout2(dir, onStep);
    const count = copyFilesToDb(objects, join(dir, BUILDING), () => onStep('copied'));
    fsyncDir(dir);
    onStep('db-built');
    writeDurably(layoutFile, `${CURRENT_LAYOUT}\n`);
    onStep('db-committed');
    if (count > 0 || result.migrated)
      result.migrated = { from: result.migrated?.from ?? 2, objects: count };
  }
  finishLayout3(dir, onStep);
  onStep('done');
  return result;
};

const BUILDING = `${OBJECTS_DB}.next`;

/** Steps 1 and 2; returns the number of objects linked. */
const toLayout2 = (dir: string, onStep: (step: LayoutStep) => void): number => {
  const count = buildTree(join(dir, 'objects'), join(dir, 'objects.next'), onStep);
  onStep('built');
  writeDurably(join(dir, 'LAYOUT'), '2\n');
  onStep('committed');
  return count;
};

/** Steps 3 to 5: finish a move to layout 2 cut short. */
const finishLayout2 = (dir: string, onStep: (step: LayoutStep) => void): void => {
  const objects = join(dir, 'objects');
  const next = join(dir, 'objects.next');
  const old = join(dir, 'objects.v1');
  if (existsSync(next)) {
    if (existsSync(objects)) {
      renameSync(objects, old);
      fsyncDir(dir);
    }
    onStep('moved-old');
    renameSync(next, objects);
    fsyncDir(dir);
    onStep('moved-new');
  }
  rmSync(old, { recursive: true, force: true });
};

/** Steps 8 and 9: the database in place, the files of layout 2 gone. */
const finishLayout3 = (dir: string, onStep: (step: LayoutStep) => void): void => {
  const building = join(dir, BUILDING);
  if (existsSync(building)) {
    renameSync(building, join(dir, OBJECTS_DB));
    fsyncDir(dir);
    onStep('db-moved');
  }
  for (const left of ['objects', 'objects.next', 'objects.v1', 'tmp']) {
    rmSync(join(dir, left), { recursive: true, force: true });
  }
};
