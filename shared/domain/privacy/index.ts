export * from './commitment.js';
export * from './content-seal.js';
export * from './key-wrap.js';
export * from './stream-keys.js';
