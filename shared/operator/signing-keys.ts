// The operator room (shared/operator/README.md): rotating the embedded server's signing key
// with the server stopped (`hefesto keys rotate-signing`).
export {
  loadKeyRing,
  retireLostKeys,
  rotateSigningKeyFile,
  SIGNING_KEY_FILE,
} from '../adapters/local/signing-key-file.js';
export { checkSigningKeys, recordedSigningKeys } from '../keys/signing-keys.js';
