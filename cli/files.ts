import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { CliError, writeText } from './context.js';

/** The lines of a file, streamed; `digest()` is the SHA-256 (hex) of the bytes read so far. */
export interface LineFile {
  lines: AsyncIterable<string>;
  digest(): string;
  close(): void;
}

export const openLines = async (path: string): Promise<LineFile> => {
  const handle = await open(path, 'r').catch((err: NodeJS.ErrnoException) => {
    throw new CliError('ErrFile', `cannot read ${path}: ${err.code ?? err.message}`, {
      cause: err,
    });
  });
  const input = handle.createReadStream();
  const hash = createHash('sha256');
  input.on('data', (chunk) => hash.update(chunk));
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  return {
    lines,
    digest: () => hash.copy().digest('hex'),
    close: () => {
      lines.close();
      input.destroy();
    },
  };
};

/** Where an export goes: a file, written whole or not at all, or stdout. */
export interface Sink {
  write(text: string): Promise<void>;
  /** Flushes, and for a file moves it into place. */
  commit(): Promise<void>;
  /** Drops a partly written file. */
  abort(): Promise<void>;
}

export const stdoutSink = (stdout: NodeJS.WritableStream): Sink => ({
  write: (text) => writeText(stdout, text),
  commit: async () => {},
  abort: async () => {},
});

/**
 * A file sink: writes `PATH.tmp-PID`, flushed to disk (fsync) when closed, and renames it to
 * PATH on commit, so PATH is never a truncated export (a crash leaves at most the temp file).
 */
export const fileSink = async (path: string): Promise<Sink> => {
  const temp = `${path}.tmp-${process.pid}`;
  const out = createWriteStream(temp, { flush: true });
  await once(out, 'open').catch((err: NodeJS.ErrnoException) => {
    throw new CliError('ErrFile', `cannot write ${temp}: ${err.code ?? err.message}`, {
      cause: err,
    });
  });
  return {
    write: (text) => writeText(out, text),
    commit: async () => {
      out.end();
      await once(out, 'close');
      await rename(temp, path);
    },
    abort: async () => {
      out.destroy();
      await rm(temp, { force: true });
    },
  };
};
