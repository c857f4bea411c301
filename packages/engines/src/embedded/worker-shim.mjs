// Entry of every engine worker thread: registers tsx so the TypeScript worker module loads in
// plain `node`, under `node --import tsx` and under vitest alike, then imports that module.
import { register } from 'tsx/esm/api';
import { workerData } from 'node:worker_threads';

register();
await import(workerData.entry);
