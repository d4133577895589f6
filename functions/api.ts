import { join } from 'node:path';
import { handle } from 'hono/aws-lambda';
import { parseAwsSettings } from '../shared/config/settings.js';
import { staticDirAssets } from '../shared/http/static-assets.js';
import { createAwsApp } from './wiring/aws.js';

/**
 * The Lambda handler (API Gateway HTTP API). Settings are validated and the app is wired
 * once per cold start, at import: a misconfigured function fails its first invocation with
 * a message naming the bad variables instead of failing requests one by one.
 *
 * The console's and the docs' files sit in `static/` beside this handler (copied there at
 * bundling, infra/bundling.ts) and are read on their first request, never at cold start.
 */
const STATIC_DIR = join(process.env.LAMBDA_TASK_ROOT ?? '.', 'static');

export const handler = handle(
  createAwsApp(parseAwsSettings(process.env), staticDirAssets(STATIC_DIR)),
);
