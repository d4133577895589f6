// The operator room (shared/operator/README.md): what `hefesto compact` reports.
export type { CompactionReport } from '../compaction/compactor.js';
