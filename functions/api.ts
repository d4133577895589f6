import { handle } from 'hono/aws-lambda';
import { parseAwsSettings } from '../shared/config/settings.js';
import { createAwsApp } from './wiring/aws.js';

/**
 * The Lambda handler (API Gateway HTTP API). Settings are validated and the app is wired
 * once per cold start, at import: a misconfigured function fails its first invocation with
 * a message naming the bad variables instead of failing requests one by one.
 */
export const handler = handle(createAwsApp(parseAwsSettings(process.env)));
