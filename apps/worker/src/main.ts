// Process entry: `node --import tsx apps/worker/src/main.ts` (or `anneal worker`): the worker
// with its real executors, configured by the environment (process-entry.ts).
import { runWorkerProcess } from './process-entry.ts';

await runWorkerProcess(process.env);
