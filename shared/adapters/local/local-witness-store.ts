import { chmod, mkdir, open, readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { InvalidInputError } from '../../domain/errors.js';
import { checkObjectKey } from '../../ports/validate.js';
import type { WitnessStore, WitnessVersion } from '../../ports/witness-store.js';

/**
 * The embedded witness: one file per published object under `dir` (the data dir's `witness/`),
 * created exclusively (`wx`: an existing file is never written over) and then made read-only
 * (0444). A directory is write-once only against this process and its bugs, not against the
 * machine's owner: copy it elsewhere (or point `dir` at a WORM mount) for a witness an
 * operator cannot edit. Each file is one version; nothing here deletes.
 */
export class LocalWitnessStore implements WitnessStore {
  constructor(readonly dir: string) {}

  #path(key: string): string {
    checkObjectKey(key);
    return join(this.dir, ...key.split('/'));
  }

  async publish(key: string, body: Uint8Array): Promise<void> {
    const path = this.#path(key);
    await mkdir(dirname(path), { recursive: true });
    const file = await open(path, 'wx', 0o444);
    try {
      await file.writeFile(body);
      await file.sync();
    } finally {
      await file.close();
    }
    await chmod(path, 0o444);
  }

  async versions(prefix: string): Promise<WitnessVersion[]> {
    if (prefix.includes('..')) throw new InvalidInputError('bad witness prefix');
    const out: WitnessVersion[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      for (const e of entries) {
        const path = join(dir, e.name);
        if (e.isDirectory()) await walk(path);
        else if (e.isFile()) {
          const key = relative(this.dir, path).split(sep).join('/');
          if (key.startsWith(prefix)) {
            out.push({ key, versionId: key, body: new Uint8Array(await readFile(path)) });
          }
        }
      }
    };
    await walk(this.dir);
    return out;
  }
}
