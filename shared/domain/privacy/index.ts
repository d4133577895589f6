export * from './commitment.js';
export * from './content-seal.js';
export * from './stream-keys.js';
