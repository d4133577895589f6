import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';

/** Requests counted by SDK command name ("S3 PutObjectCommand", "DynamoDB GetItemCommand"). */
export type Counts = Record<string, number>;

type Next = (args: unknown) => Promise<unknown>;
interface HandlerContext {
  clientName?: string;
  commandName?: string;
}

/** Adds a middleware that counts every command the client sends into `counts`. */
export const counted = <C extends S3Client | DynamoDBClient>(client: C, counts: Counts): C => {
  const middleware = (next: Next, context: HandlerContext) => (args: unknown) => {
    const name = `${context.clientName?.replace('Client', '') ?? '?'} ${context.commandName ?? '?'}`;
    counts[name] = (counts[name] ?? 0) + 1;
    return next(args);
  };
  (client.middlewareStack as S3Client['middlewareStack']).add(middleware as never, {
    step: 'initialize',
    name: 'hefestoBenchCounter',
  });
  return client;
};
