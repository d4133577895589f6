import { DecryptCommand, GenerateDataKeyCommand } from '@aws-sdk/client-kms';
import { InvalidFormatError, UnavailableError } from '../../domain/errors.js';
import type { WrapContext } from '../../domain/privacy/key-wrap.js';
import { kmsContext } from '../../domain/privacy/kms-context.js';
import { STREAM_SECRET_BYTES } from '../../domain/privacy/stream-keys.js';
import type { KeyWrapper } from '../../ports/key-wrapper.js';
import { errorName, httpStatus, isNetworkError, SEND_OPTIONS } from './transport.js';

/**
 * The AWS key-encryption key: one KMS key for every tenant (docs/privacy.md, Decision 3),
 * each stream's secret a KMS data key (`GenerateDataKey`, 32 bytes) stored only wrapped, in
 * the stream's key record. The encryption context binds the wrap to its tenant, stream and
 * key id, so KMS refuses to decrypt a wrapped secret copied into another tenant's or
 * stream's record, and CloudTrail logs each call with the tenant it served:
 *
 *   { purpose: "hefesto/v1/stream-key", tenant, stream, keyId }
 *
 * The key policy's grant requires `purpose` (infra/storage.ts). The keyring caches what it
 * unwraps (stream-keyring.ts), so KMS sees one GenerateDataKey per new stream and one Decrypt
 * per stream per cold process, never a call per append.
 *
 * Errors: throttling, KMS's internal and dependency errors and lost replies are retried
 * (`attempts`, backoff doubling from `baseDelayMs`), then 503 ErrUnavailable; AccessDenied is
 * 503 at once (the role was not granted: retrying does not help); a disabled, pending-deletion
 * or missing key is 503 saying so; a wrap that does not decrypt under this context is
 * InvalidFormatError (the keyring reports the stream's content as sealed). No message carries
 * key material, a wrapped blob or the context's values beyond the stream names logs show.
 */

/** What the adapter calls on the SDK's KMSClient (the real client fits; tests may pass one). */
export interface KmsClientLike {
  send(command: GenerateDataKeyCommand | DecryptCommand, options?: object): Promise<unknown>;
}

export interface KmsKeyWrapperOptions {
  client: KmsClientLike;
  /** The key's ARN (the stack's HEFESTO_KMS_KEY_ARN). */
  keyArn: string;
  /** Attempts per call on retryable errors (default 4). */
  attempts?: number;
  /** First backoff (default 50 ms; doubles, with jitter). */
  baseDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

const RETRYABLE = new Set([
  'ThrottlingException',
  'KMSInternalException',
  'DependencyTimeoutException',
  'KeyUnavailableException',
  'LimitExceededException',
]);
const KEY_STATE = new Set(['DisabledException', 'KMSInvalidStateException', 'NotFoundException']);
const NOT_DECRYPTABLE = new Set(['InvalidCiphertextException', 'IncorrectKeyException']);

const retryable = (err: unknown): boolean =>
  RETRYABLE.has(errorName(err) ?? '') || (httpStatus(err) ?? 0) >= 500 || isNetworkError(err);

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class KmsKeyWrapper implements KeyWrapper {
  readonly id: string;
  readonly #client: KmsClientLike;
  readonly #keyArn: string;
  readonly #attempts: number;
  readonly #baseDelayMs: number;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: KmsKeyWrapperOptions) {
    this.#client = options.client;
    this.#keyArn = options.keyArn;
    this.id = `kms:${options.keyArn}`;
    this.#attempts = options.attempts ?? 4;
    this.#baseDelayMs = options.baseDelayMs ?? 50;
    this.#sleep = options.sleep ?? defaultSleep;
  }

  async generate(ctx: WrapContext): Promise<{ secret: Buffer; wrapped: Buffer }> {
    const out = (await this.#call('GenerateDataKey', ctx.stream, () =>
      this.#client.send(
        new GenerateDataKeyCommand({
          KeyId: this.#keyArn,
          NumberOfBytes: STREAM_SECRET_BYTES,
          EncryptionContext: kmsContext(ctx),
        }),
        SEND_OPTIONS,
      ),
    )) as { Plaintext?: Uint8Array; CiphertextBlob?: Uint8Array };
    if (out.Plaintext?.length !== STREAM_SECRET_BYTES || !out.CiphertextBlob?.length) {
      throw new UnavailableError('KMS GenerateDataKey answered without a data key');
    }
    return { secret: Buffer.from(out.Plaintext), wrapped: Buffer.from(out.CiphertextBlob) };
  }

  async unwrap(ctx: WrapContext, wrapped: Buffer): Promise<Buffer> {
    const out = (await this.#call('Decrypt', ctx.stream, () =>
      this.#client.send(
        new DecryptCommand({
          KeyId: this.#keyArn,
          CiphertextBlob: wrapped,
          EncryptionContext: kmsContext(ctx),
        }),
        SEND_OPTIONS,
      ),
    )) as { Plaintext?: Uint8Array };
    if (out.Plaintext?.length !== STREAM_SECRET_BYTES) {
      throw new InvalidFormatError('KMS Decrypt answered with no stream secret');
    }
    return Buffer.from(out.Plaintext);
  }

  async #call(op: string, stream: string, send: () => Promise<unknown>): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await send();
      } catch (err) {
        const name = errorName(err) ?? 'Error';
        // the SDK's message and metadata only: never the request (it holds the wrapped blob)
        const cause = new Error(`${name}: ${err instanceof Error ? err.message : String(err)}`);
        if (NOT_DECRYPTABLE.has(name)) {
          throw new InvalidFormatError(
            `the key record of stream ${stream} does not decrypt under its encryption context`,
            { cause },
          );
        }
        if (name === 'AccessDeniedException') {
          throw new UnavailableError(`KMS ${op} on ${this.#keyArn}: access denied`, {
            cause,
            detail: "this server's role may not use the key that wraps stream keys",
          });
        }
        if (KEY_STATE.has(name)) {
          throw new UnavailableError(
            `KMS ${op}: key ${this.#keyArn} is disabled, pending deletion or missing (${name})`,
            {
              cause,
              retryAfterMs: 60_000,
              detail:
                'the KMS key that wraps stream keys is disabled or scheduled for deletion: ' +
                'the operator must enable it (docs/operations.md, "Encryption at rest")',
            },
          );
        }
        if (!retryable(err)) throw new UnavailableError(`KMS ${op} failed (${name})`, { cause });
        if (attempt >= this.#attempts) {
          throw new UnavailableError(`KMS ${op} still failing after ${attempt} attempts`, {
            cause,
            retryAfterMs: 1000,
            detail: 'the key service is busy; retry',
          });
        }
        const delay = this.#baseDelayMs * 2 ** (attempt - 1);
        await this.#sleep(delay / 2 + Math.random() * (delay / 2));
      }
    }
  }
}
