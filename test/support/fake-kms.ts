import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KMSClient } from '@aws-sdk/client-kms';

/**
 * A fake KMS for tests: an in-process HTTP server speaking KMS's JSON protocol
 * (`X-Amz-Target: TrentService.{GenerateDataKey,Decrypt}`, awsJson1_1), so the SDK's real
 * KMSClient code path (serialisation, error parsing) runs against it. One key per server; the
 * ciphertext blob is AES-256-GCM under a master secret with the encryption context (sorted
 * canonical JSON) as AAD, so a Decrypt under another context fails as KMS's does
 * (InvalidCiphertextException). Knobs: `throttleNext` failures answered ThrottlingException,
 * `enabled` (false: DisabledException), `deny` (AccessDeniedException); `calls` counts them.
 */
export class FakeKms {
  readonly keyArn = `arn:aws:kms:us-east-1:000000000000:key/${randomBytes(16)
    .toString('hex')
    .replace(/(.{8})(.{4})(.{4})(.{4})(.{12})/, '$1-$2-$3-$4-$5')}`;
  readonly #master = randomBytes(32);
  readonly calls = { GenerateDataKey: 0, Decrypt: 0 };
  throttleNext = 0;
  enabled = true;
  deny = false;
  /** Every request body received (to check no plaintext went to KMS but the context). */
  readonly bodies: string[] = [];
  #server: Server | undefined;
  endpoint = '';

  async start(): Promise<this> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        this.bodies.push(body);
        const target = String(req.headers['x-amz-target'] ?? '');
        const [status, out] = this.#answer(target.replace('TrentService.', ''), JSON.parse(body));
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify(out));
      });
    });
    await new Promise<void>((r) => this.#server?.listen(0, '127.0.0.1', r));
    this.endpoint = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => (this.#server ? this.#server.close(() => r()) : r()));
  }

  /** A real SDK client pointed at this fake, one attempt per call (the adapter retries). */
  client(): KMSClient {
    return new KMSClient({
      endpoint: this.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      maxAttempts: 1,
    });
  }

  #answer(op: string, req: Record<string, unknown>): [number, unknown] {
    const fail = (type: string, message: string): [number, unknown] => [
      400,
      { __type: type, message },
    ];
    if (op !== 'GenerateDataKey' && op !== 'Decrypt') return fail('UnsupportedOperation', op);
    this.calls[op]++;
    if (this.throttleNext > 0) {
      this.throttleNext--;
      return fail('ThrottlingException', 'Rate exceeded');
    }
    if (this.deny) return fail('AccessDeniedException', 'not authorized');
    if (req.KeyId !== this.keyArn) return fail('NotFoundException', 'no such key');
    if (!this.enabled) return fail('DisabledException', `${this.keyArn} is disabled.`);
    const aad = Buffer.from(JSON.stringify(sorted(req.EncryptionContext)), 'utf8');
    if (op === 'GenerateDataKey') {
      const plaintext = randomBytes(Number(req.NumberOfBytes ?? 32));
      const nonce = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', this.#master, nonce).setAAD(aad);
      const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      const blob = Buffer.concat([nonce, ct, cipher.getAuthTag()]);
      return [
        200,
        {
          KeyId: this.keyArn,
          Plaintext: plaintext.toString('base64'),
          CiphertextBlob: blob.toString('base64'),
        },
      ];
    }
    const blob = Buffer.from(String(req.CiphertextBlob ?? ''), 'base64');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#master, blob.subarray(0, 12));
      decipher.setAAD(aad);
      decipher.setAuthTag(blob.subarray(blob.length - 16));
      const plaintext = Buffer.concat([
        decipher.update(blob.subarray(12, blob.length - 16)),
        decipher.final(),
      ]);
      return [200, { KeyId: this.keyArn, Plaintext: plaintext.toString('base64') }];
    } catch {
      return fail('InvalidCiphertextException', '');
    }
  }
}

const sorted = (ctx: unknown): Array<[string, unknown]> =>
  Object.entries((ctx ?? {}) as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
