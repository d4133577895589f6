import { describe, expect, it } from 'vitest';
import { parseAwsSettings, parseSettings } from '../../shared/config/settings.js';

describe('settings', () => {
  describe('parseSettings', () => {
    it('takes the embedded durability from HEFESTO_DURABILITY, and refuses another word', () => {
      expect(parseSettings({ HEFESTO_DURABILITY: 'process-crash' }).durability).toBe(
        'process-crash',
      );
      expect(() => parseSettings({ HEFESTO_DURABILITY: 'none' })).toThrow(/HEFESTO_DURABILITY/);
    });

    it('reads the multi-process server settings, and refuses a count out of range', () => {
      const settings = parseSettings({ HEFESTO_WORKERS: '4', HEFESTO_WRITER_TIMEOUT_MS: '500' });
      expect(settings).toMatchObject({ workers: 4, writerTimeoutMs: 500 });
      expect(() => parseSettings({ HEFESTO_WORKERS: '0' })).toThrow(/HEFESTO_WORKERS/);
      expect(() => parseSettings({ HEFESTO_WORKERS: '65' })).toThrow(/HEFESTO_WORKERS/);
      expect(() => parseSettings({ HEFESTO_WRITER_TIMEOUT_MS: '10' })).toThrow(
        /HEFESTO_WRITER_TIMEOUT_MS/,
      );
    });

    it('has defaults for everything', () => {
      expect(parseSettings({})).toEqual({
        port: 8787,
        dataDir: './.hefesto',
        durability: 'power-loss',
        workers: 1,
        writerTimeoutMs: 30_000,
        apiKey: undefined,
        bucket: undefined,
        table: undefined,
        s3ForcePathStyle: false,
        limits: {
          maxEvents: 500,
          maxPayloadBytes: 262_144,
          maxBodyBytes: 4_194_304,
          maxJsonDepth: 32,
        },
        signingKeyIds: [],
        snapshotEvery: 25,
        logLevel: 'info',
        compaction: {
          intervalMs: 60_000,
          targetBytes: 4_194_304,
          markEvery: 16,
          graceMs: 600_000,
          maxStreams: 100,
          maxRunMs: 50_000,
        },
        retentionDays: 0,
        work: {
          budget: { maxNodes: 500_000, maxBytes: 80 * 1024 * 1024 },
          memoryMiB: 1024,
          chunkCacheBytes: 64 * 1024 * 1024,
          stateCacheBytes: 256 * 1024 * 1024,
        },
      });
    });

    it('sizes the work budget and the caches from the memory ceiling, or refuses to start', () => {
      // On Lambda the function's memory is the ceiling unless HEFESTO_MEMORY_MIB says otherwise.
      expect(parseSettings({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '2048' }).work).toMatchObject({
        memoryMiB: 2048,
        chunkCacheBytes: 128 * 1024 * 1024,
        stateCacheBytes: 512 * 1024 * 1024,
      });
      expect(
        parseSettings({
          HEFESTO_MEMORY_MIB: '512',
          HEFESTO_MAX_STATE_NODES: '100000',
          HEFESTO_MAX_STATE_BYTES: '16777216',
        }).work,
      ).toMatchObject({ memoryMiB: 512, budget: { maxNodes: 100_000, maxBytes: 16_777_216 } });
      // The default budget does not fit 512 MiB beside the runtime and the caches.
      expect(() => parseSettings({ HEFESTO_MEMORY_MIB: '512' })).toThrow(
        /HEFESTO_MAX_STATE_NODES[\s\S]*HEFESTO_MEMORY_MIB=512/,
      );
      expect(() => parseSettings({ HEFESTO_MAX_STATE_NODES: '1e6' })).toThrow(
        /HEFESTO_MAX_STATE_NODES: must be a whole number/,
      );
    });

    it('reads every variable, and treats empty ones as unset', () => {
      const settings = parseSettings({
        PORT: '9000',
        HEFESTO_DATA_DIR: '/var/lib/hefesto',
        HEFESTO_API_KEY: 'a-long-root-key-0123',
        HEFESTO_S3_FORCE_PATH_STYLE: 'true',
        HEFESTO_MAX_EVENTS: '10',
        HEFESTO_MAX_PAYLOAD_BYTES: '100',
        HEFESTO_MAX_BODY_BYTES: '',
        HEFESTO_MAX_JSON_DEPTH: '16',
        HEFESTO_LOG_LEVEL: 'silent',
      });

      expect(settings).toMatchObject({
        port: 9000,
        dataDir: '/var/lib/hefesto',
        apiKey: 'a-long-root-key-0123',
        s3ForcePathStyle: true,
        limits: { maxEvents: 10, maxPayloadBytes: 100, maxBodyBytes: 4_194_304, maxJsonDepth: 16 },
        logLevel: 'silent',
      });
    });

    it('fails fast, naming every bad variable at once', () => {
      const bad = () =>
        parseSettings({
          PORT: '80x',
          HEFESTO_API_KEY: 'short',
          HEFESTO_MAX_EVENTS: '0',
          HEFESTO_LOG_LEVEL: 'loud',
        });

      expect(bad).toThrow(/PORT[\s\S]*HEFESTO_API_KEY[\s\S]*HEFESTO_MAX_EVENTS[\s\S]*LOG_LEVEL/);
    });

    it('reads HEFESTO_HOST, the address the embedded server binds (unset: loopback only)', () => {
      expect(parseSettings({}).host).toBeUndefined();
      expect(parseSettings({ HEFESTO_HOST: '' }).host).toBeUndefined();
      expect(parseSettings({ HEFESTO_HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
      expect(parseSettings({ HEFESTO_HOST: '::' }).host).toBe('::');
      expect(() => parseSettings({ HEFESTO_HOST: 'http://0.0.0.0/' })).toThrow(/HEFESTO_HOST/);
    });

    it('reads the compaction and retention settings', () => {
      expect(
        parseSettings({
          HEFESTO_COMPACT_INTERVAL_MS: '0',
          HEFESTO_COMPACT_TARGET_BYTES: '1048576',
          HEFESTO_COMPACT_EVERY: '8',
          HEFESTO_COMPACT_GRACE_SECONDS: '30',
          HEFESTO_COMPACT_MAX_STREAMS: '5',
          HEFESTO_COMPACT_MAX_RUN_MS: '1000',
          HEFESTO_RETENTION_DAYS: '30',
        }),
      ).toMatchObject({
        compaction: {
          intervalMs: 0,
          targetBytes: 1_048_576,
          markEvery: 8,
          graceMs: 30_000,
          maxStreams: 5,
          maxRunMs: 1000,
        },
        retentionDays: 30,
      });
      expect(() => parseSettings({ HEFESTO_COMPACT_GRACE_SECONDS: '0' })).toThrow(
        /HEFESTO_COMPACT_GRACE_SECONDS/,
      );
    });
  });

  describe('parseAwsSettings', () => {
    it('requires the bucket and the table', () => {
      expect(() => parseAwsSettings({})).toThrow(/HEFESTO_BUCKET: required[\s\S]*HEFESTO_TABLE/);
      expect(parseAwsSettings({ HEFESTO_BUCKET: 'b', HEFESTO_TABLE: 't' })).toMatchObject({
        bucket: 'b',
        table: 't',
      });
    });

    it('reads the KMS key ARN that turns encryption at rest on, and refuses anything else', () => {
      const base = { HEFESTO_BUCKET: 'b', HEFESTO_TABLE: 't' };
      const arn = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
      expect(parseAwsSettings(base).kmsKeyArn).toBeUndefined();
      expect(parseAwsSettings({ ...base, HEFESTO_KMS_KEY_ARN: '' }).kmsKeyArn).toBeUndefined();
      expect(parseAwsSettings({ ...base, HEFESTO_KMS_KEY_ARN: arn }).kmsKeyArn).toBe(arn);
      for (const bad of ['alias/hefesto', '1234abcd', 'arn:aws:s3:::bucket']) {
        expect(() => parseAwsSettings({ ...base, HEFESTO_KMS_KEY_ARN: bad })).toThrow(
          /HEFESTO_KMS_KEY_ARN: must be a KMS key ARN/,
        );
      }
    });
  });
});
