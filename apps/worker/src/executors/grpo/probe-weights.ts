// Where a lagged step's mismatch probe is scored (docs/recipe.md §2.6): at θ_{s−1}, the weights
// the step trains. The policy model holds them only until the step's optim_step, and the probe's
// rollouts can be sampled only once the sampler serves θ_{s−1} — after step s − 1's optim_step,
// export and adapter load — so scoring on the policy model puts the chain optim_step → export →
// load → probe rollouts → forward → optim_step on every lagged step's path. Two ways:
//
// - `copy` (a trainer serving several models and deleting checkpoints): at the step's start,
//   before its forward_backward, the policy's weights are saved under a name of the step's own;
//   optim_step waits only for that save. A second model of the run (created at the first lagged
//   step) loads the copy and scores the probe whenever its rollouts are in, after optim_step if
//   need be; the copy is deleted once loaded. The step awaits the score before it returns, so
//   its record still carries its own mismatch_kl. Scorings are serialised on the second model
//   (a load and its forward never interleave with another step's).
// - `policy` (SkyRL FSDP serves one model; a trainer without a checkpoint delete route): the
//   probe's forward runs on the policy model beside forward_backward and optim_step waits for it.
import type { TrainerModel } from '@anneal/engines';
import type { Rollout } from '@anneal/envs';
import { TRAINER_BACKEND_TRAITS } from '@anneal/protocol';
import { probeMismatch, type MismatchKl } from './mismatch-probe.ts';
import { scoredAtTemperature } from './scoring-temperature.ts';

/** The weights one lagged step's probe is scored at. */
export interface ProbeWeights {
  /** What the step's optim_step must wait for before the update. */
  beforeUpdate(scored: Promise<unknown>): Promise<unknown>;
  /** k1, k3 of the probe at θ_{s−1} once its rollouts are in; `open()` false when they come in:
   * the step's training is over and there is nothing left to score on (the `policy` way). */
  score(
    rollouts: Promise<readonly Rollout[]>,
    step: number,
    open: () => boolean,
  ): Promise<MismatchKl | null>;
}

export interface ProbeWeightsOptions {
  /** A fresh model of the run on the trainer (the second model of the `copy` way). */
  createModel: () => Promise<TrainerModel>;
  /** `spec.rollout.temperature`: the probe is scored at the temperature it was sampled at. */
  temperature: number;
  /** A copy the trainer could not delete (the run goes on; the copy is left on disk). */
  onDeleteFailed: (path: string, error: unknown) => Promise<void>;
}

/** Which way a trainer allows: `copy` needs a second model and a checkpoint delete. */
export function probeWeightsMode(
  model: TrainerModel,
  backend: keyof typeof TRAINER_BACKEND_TRAITS | undefined,
): 'copy' | 'policy' {
  const models = backend === undefined ? 'many' : TRAINER_BACKEND_TRAITS[backend].models;
  return models === 'many' && model.deleteWeights !== undefined ? 'copy' : 'policy';
}

/** The probe copy's checkpoint name: unique per model, step and guardrail generation. */
export const probeCopyName = (runId: string, step: number, rollbacks: number) =>
  `${runId}${rollbacks > 0 ? `-g${rollbacks}` : ''}-probe-${step}`;

/** Makes each lagged step's ProbeWeights for the run. */
export class ProbeScoring {
  private probeModel: Promise<TrainerModel> | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly mode: 'copy' | 'policy',
    private readonly options: ProbeWeightsOptions,
  ) {}

  /** Called at a lagged step's start, before its forward_backward: with `copy`, saves the
   * policy's weights (θ_{s−1}) now. */
  forStep(policy: TrainerModel, copyName: string): ProbeWeights {
    const { temperature } = this.options;
    if (this.mode === 'policy') {
      const scorer = scoredAtTemperature(policy, temperature);
      return {
        beforeUpdate: (scored) => scored,
        score: async (rollouts, step, open) => {
          const probe = await rollouts;
          if (!open()) {
            throw new Error(
              `mismatch probe of step ${step}: sampled after the step's training ended`,
            );
          }
          return probeMismatch(scorer, probe, step);
        },
      };
    }
    const saved = policy.saveWeights(copyName);
    saved.catch(() => undefined); // reported by optim_step's wait and by the scoring
    return {
      beforeUpdate: () => saved,
      score: async (rollouts, step) => {
        const path = await saved;
        try {
          const probe = await rollouts;
          return await this.serial(async () => {
            const model = await this.model();
            await model.loadWeights(path, { optimizer: false });
            return probeMismatch(scoredAtTemperature(model, temperature), probe, step);
          });
        } finally {
          await this.deleteCopy(policy, path); // also when the probe's sampling failed
        }
      },
    };
  }

  private model(): Promise<TrainerModel> {
    if (this.probeModel === null) {
      this.probeModel = this.options.createModel();
      this.probeModel.catch(() => (this.probeModel = null)); // the next step tries again
    }
    return this.probeModel;
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async deleteCopy(policy: TrainerModel, path: string): Promise<void> {
    try {
      await policy.deleteWeights!(path);
    } catch (error) {
      await this.options.onDeleteFailed(path, error);
    }
  }
}
