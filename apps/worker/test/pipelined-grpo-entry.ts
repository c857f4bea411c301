// TEST ONLY process entry: the real worker process running the real grpo executor on the
// pipelined-GRPO fakes (src/executors/grpo/pipeline-fakes.ts: in-memory sampler and trainer whose
// checkpoints are their version in the path, so a second process resumes them), for the kill -9
// test of a pipelined run (pipelined-grpo-crash.redis.test.ts). Each step trains for the spec
// label `step-ms` (default 100) so that the kill lands mid-run with a batch in flight.
import { setTimeout as sleep } from 'node:timers/promises';
import { runGrpo } from '../src/executors/grpo/index.ts';
import {
  VersionedInference,
  VersionedTrainerModel,
  fakeResources,
} from './executors/pipeline-fakes.ts';
import type { Executor } from '../src/index.ts';
import { runWorkerProcess } from '../src/process-entry.ts';
import { STUB_FACTORIES } from './fixtures/engines.ts';

const pipelinedGrpo: Executor<'grpo'> = (ctx) => {
  const spec = ctx.spec;
  const inference = new VersionedInference(spec.seed, spec.steps);
  const model = new VersionedTrainerModel(inference);
  const stepMs = Number(spec.labels['step-ms'] ?? 100);
  model.beforeTrain = () => sleep(stepMs);
  return runGrpo({ ...ctx, resources: fakeResources(inference, model) });
};

await runWorkerProcess(process.env, {
  executors: { grpo: pipelinedGrpo },
  factories: STUB_FACTORIES,
});
