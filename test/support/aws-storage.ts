import { afterAll } from 'vitest';
import { dropLentStorage } from './lent-storage.js';

/**
 * A setup file of the vitest config: after each test file, drops the bucket and the table its
 * tests borrowed in turn (`lendTestStorage`, test/support/aws.ts).
 */
afterAll(async () => {
  await dropLentStorage();
});
