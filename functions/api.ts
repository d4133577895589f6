import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { handle } from 'hono/aws-lambda';
import { loadSigningRing, secretsManagerSource } from '../shared/adapters/aws/signing-secret.js';
import { parseAwsSettings } from '../shared/config/settings.js';
import { staticDirAssets } from '../shared/http/static-assets.js';
import { checkAwsSigning, createAwsApp } from './wiring/aws.js';

/**
 * The Lambda handler (API Gateway HTTP API). Settings are validated and the app is wired
 * once per cold start, at import: a misconfigured function fails its first invocation with
 * a message naming the bad variables instead of failing requests one by one. The signing
 * key (HEFESTO_SIGNING_SECRET, a Secrets Manager secret only this function may read) is read
 * once per cold start too, before the first request is served (signing-secret.ts), and checked
 * against the stack's pinned key ids and the keys that signed heads before (checkAwsSigning).
 *
 * The console's and the docs' files sit in `static/` beside this handler (copied there at
 * bundling, infra/bundling.ts) and are read on their first request, never at cold start.
 */
const STATIC_DIR = join(process.env.LAMBDA_TASK_ROOT ?? '.', 'static');
const settings = parseAwsSettings(process.env);
type Handler = ReturnType<typeof handle>;

const build = async (): Promise<Handler> => {
  const signing = settings.signingSecret
    ? await loadSigningRing(secretsManagerSource(), settings.signingSecret)
    : undefined;
  // A lost or replaced key (a secret changed without rotation) refuses the cold start.
  if (signing) await checkAwsSigning(settings, signing);
  return handle(createAwsApp(settings, signing, staticDirAssets(STATIC_DIR)));
};

// Built once; a failed build (the secret unreadable) is tried again by the next invocation.
let app: Promise<Handler> | undefined;
const ready = (): Promise<Handler> => {
  app ??= build();
  app.catch(() => {
    app = undefined;
  });
  return app;
};
void ready();

export const handler = async (event: Parameters<Handler>[0], context: Context) =>
  (await ready())(event, context);
