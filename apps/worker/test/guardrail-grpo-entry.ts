// TEST ONLY process entry: the real worker process with the real executors on the embedded
// engines whose trainer diverges (fixtures/kl-fault.ts), and hangs once it has: opening a
// model at a checkpoint never finishes, so a worker that started a guardrail rollback is caught
// in it and the test kills it there (guardrail-crash.redis.test.ts).
import { loadWorkerConfig } from '../src/env.ts';
import { runWorkerProcess } from '../src/process-entry.ts';
import { embeddedTrainerDirs } from '../src/resources/resolve.ts';
import { KL_FAULT, klFaultEngines } from './fixtures/kl-fault.ts';

const fault = klFaultEngines(embeddedTrainerDirs(loadWorkerConfig(process.env)), {
  ...KL_FAULT,
  hangOnRestore: true,
});
await runWorkerProcess(process.env, { factories: { embedded: fault.engines } });
