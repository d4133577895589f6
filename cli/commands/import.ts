import type { HefestoClient } from '../../shared/client/client.js';
import { HefestoApiError } from '../../shared/client/errors.js';
import type { DeltaOp, LedgerEvent } from '../../shared/client/types.js';
import { canonicalJson } from '../../shared/domain/canonical.js';
import { DELTA_EVENT, RESERVED_TYPE_PREFIX } from '../../shared/domain/state.js';
import { NEW_STREAM_DIGEST_VERSION } from '../../shared/domain/state-digest.js';
import { type Command, intOption, stringOption } from '../command.js';
import { CliError, fieldLines, UsageError } from '../context.js';
import { DigestTranslator } from '../digest-translate.js';
import { EXPORT_FORMAT } from '../export-format.js';
import { checkFile, describeFailure } from './verify-file.js';

/** A batch stays well under the server's default 4 MiB body limit. */
const MAX_BATCH_BYTES = 2 * 1024 * 1024;

interface Plan {
  target: string;
  /** Idempotency keys are this prefix and the batch index. */
  keyPrefix: string;
  /** The target's head when the import started: events up to it are already there. */
  resumeAt: number;
  batchSize: number;
  /** Set when the file's digest version is not the target's. */
  translator?: DigestTranslator;
}

/**
 * Replays a verified file's events into the target, in batches cut the same way on every run
 * (runs of plain events up to `batchSize` / MAX_BATCH_BYTES; each checkpoint alone), so
 * batch i always has the same Idempotency-Key and body:
 *
 *   1. batches that end at or before the target's head are skipped, after checking that the
 *      target holds the same types and payloads (a rerun resumes; another stream is refused);
 *   2. plain events are appended with expectedSeq = the seq before the batch, so nothing
 *      else can interleave; a reply lost to a crash is answered again from the key;
 *   3. a `hefesto.delta` is written again through the checkpoint route, which recomputes the
 *      state and refuses it unless the target's state digest is the one it was based on. A
 *      file of another digest version than the target's (a v1 export into a new, v2 stream)
 *      has its digests translated, each delta checked here first (digest-translate.ts).
 */
class Importer {
  written = 0;
  skipped = 0;
  requests = 0;
  readonly #client: HefestoClient;
  readonly #plan: Plan;
  #existing: AsyncIterator<LedgerEvent> | undefined;
  #batch: LedgerEvent[] = [];
  #bytes = 0;
  #index = 0;

  constructor(client: HefestoClient, plan: Plan) {
    this.#client = client;
    this.#plan = plan;
  }

  async add(event: LedgerEvent): Promise<void> {
    if (event.type === DELTA_EVENT) {
      await this.flush();
      // Translated even when skipped: the state kept here must follow every delta.
      const body = this.#plan.translator?.translate(event);
      await this.#send(this.#index++, [event], body);
      return;
    }
    const bytes = Buffer.byteLength(JSON.stringify({ type: event.type, payload: event.payload }));
    const full =
      this.#batch.length >= this.#plan.batchSize || this.#bytes + bytes > MAX_BATCH_BYTES;
    if (this.#batch.length > 0 && full) await this.flush();
    this.#batch.push(event);
    this.#bytes += bytes;
  }

  async flush(): Promise<void> {
    const events = this.#batch;
    if (events.length === 0) return;
    this.#batch = [];
    this.#bytes = 0;
    await this.#send(this.#index++, events);
  }

  async #send(
    index: number,
    events: LedgerEvent[],
    translated?: { ops: DeltaOp[]; baseDigest: string; stateDigest: string },
  ): Promise<void> {
    const { target, resumeAt, keyPrefix } = this.#plan;
    const first = events[0]?.seq ?? 0;
    const last = events.at(-1)?.seq ?? 0;
    if (last <= resumeAt) {
      for (const event of events) await this.#matchExisting(event, translated);
      this.skipped += events.length;
      return;
    }
    if (first <= resumeAt) {
      throw new CliError(
        'ErrStreamExists',
        `stream ${target} is at seq ${resumeAt}, inside batch ${index} (seqs ${first}..${last}): ` +
          'it was not written by this import (with this --batch)',
      );
    }
    const idempotencyKey = `${keyPrefix}${index}`;
    this.requests++;
    const delta = events.length === 1 && events[0]?.type === DELTA_EVENT ? events[0] : undefined;
    const seq = delta
      ? (
          await this.#client.checkpoint(
            target,
            translated ??
              (delta.payload as { ops: DeltaOp[]; baseDigest: string; stateDigest: string }),
            { idempotencyKey },
          )
        ).seq
      : (
          await this.#client.append(
            target,
            events.map((e) => ({ type: e.type, payload: e.payload })),
            { expectedSeq: first - 1, idempotencyKey },
          )
        ).lastSeq;
    if (seq !== last) {
      throw new CliError('ErrSeqConflict', `batch ${index} landed at seq ${seq}, expected ${last}`);
    }
    this.written += events.length;
  }

  async #matchExisting(
    event: LedgerEvent,
    translated?: { ops: DeltaOp[]; stateDigest: string },
  ): Promise<void> {
    this.#existing ??= this.#client.events(this.#plan.target)[Symbol.asyncIterator]();
    const { value, done } = await this.#existing.next();
    // A translated delta holds the target version's digests: its ops and result must match.
    const payloadOf = (p: unknown) => {
      if (!translated) return canonicalJson(p as never);
      const { ops, stateDigest } = p as { ops: unknown; stateDigest: unknown };
      return canonicalJson({ ops, stateDigest } as never);
    };
    const same =
      !done &&
      value.seq === event.seq &&
      value.type === event.type &&
      payloadOf(value.payload) === payloadOf(translated ?? event.payload);
    if (!same) {
      throw new CliError(
        'ErrStreamExists',
        `stream ${this.#plan.target} already holds a seq ${event.seq} that is not the file's`,
      );
    }
  }
}

/** The target's seq and digest version (a stream created now: 2). */
const headOf = async (
  client: HefestoClient,
  stream: string,
): Promise<{ seq: number; digestVersion: 1 | 2 }> => {
  try {
    const head = await client.getStream(stream);
    return { seq: head.seq, digestVersion: head.digestVersion ?? 1 };
  } catch (err) {
    if (err instanceof HefestoApiError && err.code === 'ErrStreamNotFound') {
      return { seq: 0, digestVersion: NEW_STREAM_DIGEST_VERSION };
    }
    throw err;
  }
};

export const importFile: Command = {
  name: 'import',
  usage: 'FILE --stream NEW [--batch N]',
  summary:
    `check an export (${EXPORT_FORMAT}) offline, then append its events in order to a new ` +
    'stream (in batches of N, default 500, with expectedSeq and idempotency keys from the ' +
    "file's hash: a rerun resumes); the copy has the same seqs, types, payloads and state, " +
    'but new timestamps and so new hashes',
  args: ['FILE'],
  options: { stream: { type: 'string' }, batch: { type: 'string' } },
  run: async (ctx, [path = ''], values) => {
    const target = stringOption(values, 'stream');
    if (target === undefined) throw new UsageError('--stream NEW is required');
    const batchSize = intOption(values, 'batch', 1) ?? 500;
    const found: { reserved?: LedgerEvent } = {};
    const checked = await checkFile(ctx, path, {
      label: `check ${path}`,
      onEvent: async (event) => {
        if (event.type.startsWith(RESERVED_TYPE_PREFIX) && event.type !== DELTA_EVENT) {
          found.reserved ??= event;
        }
      },
    });
    const { check } = checked;
    if (!check.ok) {
      await ctx.print(describeFailure(path, check));
      return 1;
    }
    const { reserved } = found;
    if (reserved !== undefined) {
      throw new CliError(
        'ErrInvalidInput',
        `${path} holds a ${reserved.type} event (seq ${reserved.seq}): ` +
          (reserved.type === 'hefesto.migration'
            ? 'a schema migration cannot be imported yet (docs/schema-evolution.md)'
            : "a fork's origin state cannot be imported; fork the source stream on the target instead"),
      );
    }
    const client = ctx.client();
    const source = check.header;
    const targetHead = await headOf(client, target);
    const resumeAt = targetHead.seq;
    const fileVersion = source.digestVersion ?? 1;
    if (resumeAt > source.head.seq) {
      throw new CliError(
        'ErrStreamExists',
        `stream ${target} already has more events than ${path}`,
      );
    }
    const importer = new Importer(client, {
      target,
      keyPrefix: `import:${checked.digest.slice(0, 32)}:${target}:`,
      resumeAt,
      batchSize,
      ...(fileVersion === targetHead.digestVersion
        ? {}
        : { translator: new DigestTranslator(fileVersion, targetHead.digestVersion) }),
    });
    const changed = () => new CliError('ErrFile', `${path} changed while it was being imported`);
    const again = await checkFile(ctx, path, {
      label: `import ${target}`,
      onEvent: (event) => importer.add(event),
      onEnd: async (digest) => {
        if (digest !== checked.digest) throw changed();
        await importer.flush();
      },
    });
    if (!again.check.ok) throw changed();
    const head = await client.getStream(target);
    const summary = {
      source: { tenant: source.tenant, streamId: source.streamId, ...source.head },
      target: { streamId: target, seq: head.seq, hash: head.hash },
      written: importer.written,
      skipped: importer.skipped,
      requests: importer.requests,
    };
    if (ctx.settings.json) {
      await ctx.print(JSON.stringify(summary));
      return 0;
    }
    const lines = fieldLines([
      [
        'source',
        `${source.tenant}/${source.streamId} seq ${source.head.seq} hash ${source.head.hash}`,
      ],
      ['target', `${target} seq ${head.seq} hash ${head.hash}`],
      ['written', `${importer.written} events in ${importer.requests} requests`],
      ['skipped', `${importer.skipped} events already there`],
    ]);
    for (const line of lines) await ctx.print(line);
    return 0;
  },
};
