import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultTrustStorePath, FileTrustStore } from '../../shared/client/trust-store-file.js';
import { proofsApp } from '../support/proofs-app.js';
import { memoryStores, type StorePair } from '../support/stores.js';

/**
 * The test run keeps a verifying client's default trust file out of the home directory
 * (test/support/isolated-trust-file.ts): a head trusted in one test file, or left by an
 * earlier run, must never meet a later server's stream of the same name.
 */
describe('the default trust file under the tests', () => {
  let stores: StorePair;
  beforeEach(async () => {
    stores = await memoryStores.make();
  });
  afterEach(() => stores.cleanup());

  it('is a file of this test file, outside the home directory, where a verifying client writes', async () => {
    const path = defaultTrustStorePath();
    expect(path).toBe(process.env.HEFESTO_TRUST_FILE);
    expect(path.startsWith(homedir())).toBe(false);
    expect(existsSync(path)).toBe(false);

    const client = proofsApp(stores).client({ verify: true });
    await client.append('run-1', [{ type: 'observation', payload: { n: 1 } }]);
    const at = { baseUrl: 'http://hefesto.test', tenant: 'default', stream: 'run-1' };
    expect(await new FileTrustStore(path).get(at)).toMatchObject({ treeSize: 1 });
  });
});
