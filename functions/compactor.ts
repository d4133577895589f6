import type { CompactionReport } from '../shared/compaction/compactor.js';
import { parseAwsSettings } from '../shared/config/settings.js';
import { runAndLog } from './wiring/compaction.js';
import { createAwsCompactor } from './wiring/compactor.js';

/**
 * The scheduled compactor (EventBridge -> Lambda). Each invocation runs one bounded pass
 * (HEFESTO_COMPACT_MAX_STREAMS streams, HEFESTO_COMPACT_MAX_RUN_MS; keep the function's timeout
 * above it) and logs one line with what it did; work left over is found by the next one.
 * Settings are validated once per cold start, at import.
 */
const { compactor, logger } = createAwsCompactor(parseAwsSettings(process.env));

export const handler = async (): Promise<CompactionReport> => runAndLog(compactor, logger);
