import { KMSClient } from '@aws-sdk/client-kms';
import { type KmsClientLike, KmsKeyWrapper } from '../../shared/adapters/aws/kms-key-wrapper.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import type { AwsSettings } from '../../shared/config/settings.js';
import type { RecordStore } from '../../shared/ports/record-store.js';

/**
 * The stream keys on AWS (docs/privacy.md, Decision 3): set when the stack passes the KMS
 * key's ARN (HEFESTO_KMS_KEY_ARN, to the API and compactor functions alone), and then new
 * streams are encrypted at rest; unset, streams are written in the clear as before. The
 * keyring caches unwrapped keys, so KMS is called per stream, never per append; the client
 * makes one attempt per call and the wrapper retries.
 */
export const awsKeyring = (
  settings: AwsSettings,
  records: RecordStore,
  kms?: KmsClientLike,
): StreamKeyring | undefined =>
  settings.kmsKeyArn
    ? new StreamKeyring(
        records,
        new KmsKeyWrapper({
          client: kms ?? new KMSClient({ maxAttempts: 1 }),
          keyArn: settings.kmsKeyArn,
        }),
      )
    : undefined;
