import { describe, expect, it } from 'vitest';
import { parseAwsSettings, parseSettings } from '../../shared/config/settings.js';

describe('settings', () => {
  describe('parseSettings', () => {
    it('has defaults for everything', () => {
      expect(parseSettings({})).toEqual({
        port: 8787,
        dataDir: './.hefesto',
        apiKey: undefined,
        bucket: undefined,
        table: undefined,
        s3ForcePathStyle: false,
        limits: { maxEvents: 500, maxPayloadBytes: 262_144, maxBodyBytes: 4_194_304 },
        snapshotEvery: 25,
        logLevel: 'info',
      });
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
        HEFESTO_LOG_LEVEL: 'silent',
      });

      expect(settings).toMatchObject({
        port: 9000,
        dataDir: '/var/lib/hefesto',
        apiKey: 'a-long-root-key-0123',
        s3ForcePathStyle: true,
        limits: { maxEvents: 10, maxPayloadBytes: 100, maxBodyBytes: 4_194_304 },
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
  });

  describe('parseAwsSettings', () => {
    it('requires the bucket and the table', () => {
      expect(() => parseAwsSettings({})).toThrow(/HEFESTO_BUCKET: required[\s\S]*HEFESTO_TABLE/);
      expect(parseAwsSettings({ HEFESTO_BUCKET: 'b', HEFESTO_TABLE: 't' })).toMatchObject({
        bucket: 'b',
        table: 't',
      });
    });
  });
});
