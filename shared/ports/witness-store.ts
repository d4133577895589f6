/**
 * WitnessStore: write-once storage for the signed tree heads the compactor publishes
 * (docs/proofs.md, "Witness"). What the witness holds must outlive an operator who can write
 * the data bucket and the table: on AWS a separate bucket with S3 Object Lock in compliance
 * mode (a lock protects object *versions*, so a put under an existing key makes a new version
 * and the old one stays; readers read every version), in embedded mode a directory of files
 * created exclusively and left read-only.
 *
 * - `publish` writes a new object (version) that nobody can change or delete before its
 *   retention ends; a key never names two different bodies on purpose (keys carry the run's
 *   time and id).
 * - `versions` answers every stored version under a prefix, each with its body, in no
 *   particular order: audits judge each one.
 */

export interface WitnessVersion {
  key: string;
  /** The version's id (S3 VersionId; the file name in a directory). */
  versionId: string;
  body: Uint8Array;
}

export interface WitnessStore {
  publish(key: string, body: Uint8Array): Promise<void>;
  versions(prefix: string): Promise<WitnessVersion[]>;
}

/** In-memory witness (tests): versions are kept, none ever replaced. */
export class MemoryWitnessStore implements WitnessStore {
  readonly #versions: WitnessVersion[] = [];

  async publish(key: string, body: Uint8Array): Promise<void> {
    this.#versions.push({ key, versionId: String(this.#versions.length + 1), body: body.slice() });
  }

  async versions(prefix: string): Promise<WitnessVersion[]> {
    return this.#versions
      .filter((v) => v.key.startsWith(prefix))
      .map((v) => ({ ...v, body: v.body.slice() }));
  }
}
