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
import { keyToPath } from './object-paths.js';
import { filesUnderV1 } from './object-paths-v1.js';

/**
 * The object layout of a data directory is recorded in its `LAYOUT` file (the version, one
 * line). No LAYOUT file: layout 1, what every version before it wrote (object-paths-v1.ts).
 * This code writes layout 2 (object-paths.ts) and moves a layout-1 directory to it on open,
 * under the data directory lock. Going back to a version before LAYOUT is not supported.
 *
 * The move, and what a crash after each step leaves for the next open:
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
 * A new data directory takes the same path with nothing to link.
 *
 * `onStep` observes the move (tests kill the process at each step to check the above).
 */

export const CURRENT_LAYOUT = 2;

export type LayoutStep = 'linked' | 'built' | 'committed' | 'moved-old' | 'moved-new' | 'done';

export interface LayoutResult {
  /** Set when this open moved the directory from layout 1. */
  migrated?: { from: 1; objects: number };
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
  const next = join(dir, 'objects.next');
  const old = join(dir, 'objects.v1');
  const result: LayoutResult = {};

  let version = readLayout(layoutFile);
  if (version > CURRENT_LAYOUT) {
    throw new UnavailableError(
      `data dir ${dir} has object layout ${version}, written by a newer Hefesto; this one ` +
        `reads layout ${CURRENT_LAYOUT}`,
    );
  }
  if (version === 1) {
    const count = buildTree(objects, next, onStep);
    onStep('built');
    writeDurably(layoutFile, `${CURRENT_LAYOUT}\n`);
    version = CURRENT_LAYOUT;
    result.migrated = { from: 1, objects: count };
    onStep('committed');
  }
  // Layout 2 from here on; finish a move cut short (steps 3 to 5).
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
  onStep('done');
  return result;
};
