// Launching a lagged step's mismatch probe (docs/recipe.md §2.6): its rollouts are sampled from
// version s − 1, the version the step trains, and scored at those weights (probe-weights.ts).
// Version s − 1 is served from the end of step s − 1's weight sync, so at rollout.maxPolicyLag ≥ 1
// step s − 1 launches step s's probe right after it adopts that version (`launchProbeAhead`)
// instead of step s launching it when it starts: step s − 1 goes on to wait for its own probe,
// and the next probe's rollouts are sampled meanwhile. A probe launched ahead draws step s's
// prompts and is sized against step s − 1's batch (its rollouts and generated tokens; step s's
// are still being sampled). Every step after a session's or a generation's first is lagged at
// lag ≥ 1, so a probe launched ahead is always taken, unless the run stops or rolls back
// first: then it is aborted and settled (`dropProbeAhead`). With `rollout.probeEvery` k > 1
// only the steps divisible by k are probed (`probesStep`); the others record no mismatch.
import { promptsOfStep } from './batch.ts';
import { sampleMismatchProbe, type LaunchedProbe, type ProbeBatch } from './mismatch-probe.ts';
import type { PreparedBatch } from './prepared-batch.ts';
import { probeCopyName } from './probe-weights.ts';
import type { GrpoState } from './setup.ts';

/** The batch a probe is sized against: its rollouts and their generated tokens. */
const sizing = (batch: PreparedBatch): ProbeBatch => {
  const rollouts = batch.groups.flat();
  return {
    rollouts: rollouts.length,
    generatedTokens: rollouts.reduce((n, r) => n + r.generatedTokens, 0),
  };
};

function launch(
  runId: string,
  state: GrpoState,
  step: number,
  prompts: readonly (readonly number[])[],
  batch: ProbeBatch,
): LaunchedProbe {
  const controller = new AbortController();
  const weights = state.probeScoring.forStep(
    state.model,
    probeCopyName(runId, step, state.epoch.rollbacks),
  );
  const sampled = state.samplerBusy.during(() =>
    sampleMismatchProbe({
      env: state.policyEnv,
      versions: state.versions,
      prompts,
      batch,
      fraction: state.spec.rollout.probeFraction,
      seed: state.epoch.seed,
      step,
      signal: controller.signal,
    }),
  );
  const kl = weights.score(sampled, step);
  const scored = Promise.all([sampled, kl]).then(([probe, k]) => ({ rollouts: probe, kl: k }));
  scored.catch(() => undefined); // reported by the step that awaits it (or dropped if it failed first)
  return {
    step,
    scored,
    beforeUpdate: () => weights.beforeUpdate(scored).then(() => undefined),
    close: () => weights.close(),
    abort: () => controller.abort(new Error(`mismatch probe of step ${step} dropped`)),
  };
}

/** Whether lagged step `step` runs the probe: `rollout.probeEvery` k probes the steps divisible
 * by k — by step number, so a resumed or rolled-back run probes the same steps. */
export function probesStep(state: GrpoState, step: number): boolean {
  return step % state.spec.rollout.probeEvery === 0;
}

/** Step `step`'s probe: the one launched ahead for it, else launched now. */
export function takeProbe(
  runId: string,
  state: GrpoState,
  step: number,
  batch: PreparedBatch,
): LaunchedProbe {
  const ahead = state.probeAhead;
  state.probeAhead = null;
  if (ahead?.step === step) return ahead;
  if (ahead) void settle(ahead); // not this step's (never expected): dropped
  return launch(
    runId,
    state,
    step,
    batch.prompts.map((p) => p.tokens),
    sizing(batch),
  );
}

/** Right after step `step` adopted its weights: launches step step + 1's probe when it will be
 * lagged, run and probed. */
export function launchProbeAhead(
  runId: string,
  state: GrpoState,
  step: number,
  batch: PreparedBatch,
): void {
  const next = step + 1;
  if (state.spec.rollout.maxPolicyLag === 0 || step >= state.spec.steps) return;
  if (!probesStep(state, next)) return;
  const prompts = promptsOfStep(state, next).map((p) => p.tokens);
  state.probeAhead = launch(runId, state, next, prompts, sizing(batch));
}

/** Aborts a probe launched ahead and not taken, and waits until it has settled (its version
 * unpinned, any copy deleted): before a rollback restores the policy, and when the run ends. */
export async function dropProbeAhead(state: GrpoState): Promise<void> {
  const ahead = state.probeAhead;
  state.probeAhead = null;
  if (ahead) await settle(ahead);
}

async function settle(probe: LaunchedProbe): Promise<void> {
  probe.abort();
  probe.close();
  await probe.scored.catch(() => undefined);
}
