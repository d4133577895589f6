import { closeSync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * A file's bytes and its directory entry are made durable separately: fsync the file for the
 * bytes, fsync the directory for the entry (a create, link, rename or unlink).
 */

export const fsyncDir = (dir: string): void => {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
};

/** `mkdir -p` that also fsyncs the parent of every directory it creates. */
export const mkdirDurable = (dir: string): void => {
  const first = mkdirSync(dir, { recursive: true });
  if (first === undefined) return;
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    fsyncDir(dirname(d));
    if (d === first) break;
  }
};
