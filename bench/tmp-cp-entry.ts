import { runCheckpointBench } from './checkpoints.js';

await runCheckpointBench();
