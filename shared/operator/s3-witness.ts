// The operator room (shared/operator/README.md): a witness bucket on S3. Its own file, so a
// command imports it (and the AWS SDK) only when it reads an s3:// witness.
export { S3WitnessStore } from '../adapters/aws/s3-witness-store.js';
