import { runBundleBench } from './bundle.js';
import { runCheckpointBench } from './checkpoints.js';
import { runCheckpointV2Bench } from './checkpoints-v2.js';
import { runCompactionBench } from './compaction.js';
import { runEmbeddedConcurrencyBench } from './embedded-concurrency.js';
import { runHttpBench } from './http.js';
import { runLangGraphBench } from './langgraph-savers.js';
import { runLedgerBench } from './ledger.js';
import { runMigrationBench } from './migration.js';
import { runProofsDomainBench } from './proofs-domain.js';
import { runProofsServiceBench } from './proofs-service.js';
import { runResumeBench } from './resume.js';
import { runStateV2Bench } from './state-v2.js';

/** `npm run bench`: every benchmark of the project, printed as Markdown tables. */
console.log(`# Hefesto benchmarks — node ${process.version}, ${new Date().toISOString()}`);
runLedgerBench();
await runHttpBench();
await runCheckpointBench();
await runStateV2Bench();
await runCheckpointV2Bench();
await runResumeBench();
await runMigrationBench();
await runBundleBench();
await runCompactionBench();
await runEmbeddedConcurrencyBench();
await runLangGraphBench();
await runProofsDomainBench();
await runProofsServiceBench();
