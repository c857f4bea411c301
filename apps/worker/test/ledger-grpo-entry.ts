// TEST ONLY process entry: the real worker process with the real grpo executor on the embedded
// engines, whose step commits can be held for ever at one point so that the kill -9 test of the
// rollout ledger (ledger-crash.redis.test.ts) kills it exactly there. The spec label `hold` is
// `<attempt>:<before|after>:<step>` entries, comma separated: `before` holds with the step's
// ledger copy on disk and its record not yet in Redis; `after` holds once Redis has the record,
// before the copy is renamed to the step's.
import { EXECUTORS } from '../src/executors/index.ts';
import type { Executor } from '../src/index.ts';
import { runWorkerProcess } from '../src/process-entry.ts';

const never = () => new Promise<never>(() => undefined);

const heldGrpo: Executor<'grpo'> = (ctx) => {
  const holds = (ctx.spec.labels['hold'] ?? '').split(',').map((h) => h.split(':'));
  const held = (when: string, step: number) =>
    holds.some(([a, w, s]) => Number(a) === ctx.attempt && w === when && Number(s) === step);
  const commitStep: typeof ctx.commitStep = async (step, metrics, rollbacks) => {
    if (held('before', step)) await never();
    const outcome = await ctx.commitStep(step, metrics, rollbacks);
    if (held('after', step)) await never();
    return outcome;
  };
  return EXECUTORS.grpo({ ...ctx, commitStep });
};

await runWorkerProcess(process.env, { executors: { ...EXECUTORS, grpo: heldGrpo } });
