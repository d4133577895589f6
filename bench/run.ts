import { runHttpBench } from './http.js';
import { runLedgerBench } from './ledger.js';

/** `npm run bench`: every benchmark of the project, printed as Markdown tables. */
console.log(`# Hefesto benchmarks — node ${process.version}, ${new Date().toISOString()}`);
runLedgerBench();
await runHttpBench();
