import { runBundleBench } from './bundle.js';
import { runCheckpointBench } from './checkpoints.js';
import { runCompactionBench } from './compaction.js';
import { runHttpBench } from './http.js';
import { runLedgerBench } from './ledger.js';
import { runMigrationBench } from './migration.js';
import { runResumeBench } from './resume.js';
import { runSnapshotsV2Bench } from './snapshots-v2.js';

/** `npm run bench`: every benchmark of the project, printed as Markdown tables. */
console.log(`# Hefesto benchmarks — node ${process.version}, ${new Date().toISOString()}`);
runLedgerBench();
await runHttpBench();
await runCheckpointBench();
await runSnapshotsV2Bench();
await runResumeBench();
await runMigrationBench();
await runBundleBench();
await runCompactionBench();
