// TEST ONLY process entry: the real worker process (environment, signals, exit codes of
// src/process-entry.ts) with the counting executors and stub engines passed in code, so that
// process-level tests (kill -9, SIGTERM) do not depend on real training. Spawned by process.ts.
import { runWorkerProcess } from '../src/process-entry.ts';
import { STUB_FACTORIES } from './fixtures/engines.ts';
import { EXECUTORS } from './fixtures/executors.ts';

await runWorkerProcess(process.env, { executors: EXECUTORS, factories: STUB_FACTORIES });
