import {
  CreateTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { errorName } from './transport.js';

/**
 * Creates the record table (pk/sk strings, on-demand, TTL on `ttl`) and waits until it is
 * active. For tests and development; production creates it with the CDK stack. Safe to call
 * for a table that exists.
 *
 * @example
 * await createRecordTable(new DynamoDBClient({}), 'hefesto-dev');
 */
export const createRecordTable = async (client: DynamoDBClient, table: string): Promise<void> => {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
      }),
    );
  } catch (err) {
    if (errorName(err) !== 'ResourceInUseException') throw err;
  }
  await waitUntilTableExists(
    { client, maxWaitTime: 120, minDelay: 1, maxDelay: 5 },
    { TableName: table },
  );
  const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: table }));
  const status = ttl.TimeToLiveDescription?.TimeToLiveStatus;
  if (status === 'ENABLED' || status === 'ENABLING') return;
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: table,
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
    }),
  );
};
