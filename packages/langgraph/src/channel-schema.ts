import { SchemaTooNewError, UpcasterMissingError } from '@hefesto/client';

/**
 * Schema versions of a thread's channel values (docs/schema-evolution.md, "LangGraph"). A
 * saver declares the version its graph's channel values have, and for each channel whose
 * shape changed, upcasters from older versions (`channels[name][n]` turns version n's value
 * into version n + 1's). A checkpoint's stream state records the version it was written at
 * (`schema`, absent: 1), and so does its delta (`schema`, bound by the chain). Reading a
 * checkpoint of an older version upcasts its values; a put after it writes every channel in
 * the new shape. A channel without upcasters keeps its value across versions.
 *
 * Pending writes are stamped one by one (`s` in the encoded value, absent: 1), as the writes of
 * one checkpoint may come from savers of two versions (a version-1 task that finished before the
 * deploy, a version-2 one after it): a write of an older version is upcast with its channel's
 * upcasters when read (so they must accept a write's value, the update the channel's reducer
 * takes, as well as the channel's value), one of a newer version refused. A DeltaChannel's seed
 * is upcast from the version of the state it was read from.
 *
 * @example
 * ```ts
 * const schema: ChannelSchema = {
 *   version: 2,
 *   channels: { notes: { 1: (notes) => (notes as string[]).map((text) => ({ text })) } },
 * };
 * ```
 */
export interface ChannelSchema {
  version: number;
  channels?: Readonly<Record<string, Readonly<Record<number, (value: unknown) => unknown>>>>;
}

/**
 * The version a saver reads and writes, applied to stream states (internal to the saver).
 *
 * @example
 * ```ts
 * const schema = new ChannelUpcasters({ version: 2, channels: {} });
 * ```
 */
export class ChannelUpcasters {
  readonly version: number;
  readonly #channels: NonNullable<ChannelSchema['channels']>;

  constructor(schema?: ChannelSchema) {
    const version = schema?.version ?? 1;
    if (!Number.isSafeInteger(version) || version < 1) {
      throw new TypeError(`schema.version must be an integer from 1, not ${version}`);
    }
    this.version = version;
    this.#channels = schema?.channels ?? {};
  }

  /** The version a stream state was written at; a newer one than ours is refused. */
  versionOf(state: { schema?: unknown }): number {
    const v = state.schema;
    const stored = typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 ? v : 1;
    if (stored > this.version) throw new SchemaTooNewError(stored, this.version);
    return stored;
  }

  /** The version a pending write was written at (its stamp); a newer one than ours is refused. */
  versionOfWrite(encoded: { s?: unknown }): number {
    return this.versionOf({ schema: encoded.s });
  }

  /** Whether values of `channel` change between versions (its upcasters). */
  upcasts(channel: string): boolean {
    return this.version > 1 && this.#channels[channel] !== undefined;
  }

  /** A channel's value of version `from`, brought up to ours. */
  upcast(channel: string, value: unknown, from: number): unknown {
    const steps = this.#channels[channel];
    if (!steps) return value;
    let out = value;
    for (let v = from; v < this.version; v++) {
      const up = steps[v];
      // A channel that declares upcasters declares every step, or says which one it lacks.
      if (!up) throw new UpcasterMissingError(v, from, this.version);
      out = up(out);
    }
    return out;
  }

  /** What a put records: the version on the stream state and its delta, above 1 only. */
  get stamp(): { schema: number } | Record<string, never> {
    return this.version > 1 ? { schema: this.version } : {};
  }

  /** What a pending write's encoded value records: the version, above 1 only. */
  get writeStamp(): { s: number } | Record<string, never> {
    return this.version > 1 ? { s: this.version } : {};
  }
}
