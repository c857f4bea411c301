// Where a lagged step's mismatch probe is scored (docs/recipe.md §2.6): at θ_{s−1}, the weights
// the step trains. The policy model holds them only until the step's optim_step, and the probe's
// rollouts can be sampled only once the sampler serves θ_{s−1} — after step s − 1's optim_step,
// export and adapter load — so a probe that must be scored on the policy model puts the chain
// optim_step → export → load → probe rollouts → forward → optim_step on the step's path.
//
// When forward_backward returns (`beforeUpdate`):
// - the probe's rollouts are in: its forward was sent to the policy model as soon as they were
//   (beside forward_backward), and optim_step waits for it — nothing else is spent;
// - they are not, on a trainer that serves several models and deletes checkpoints: the policy's
//   weights are saved (a copy of θ_{s−1}) and optim_step waits only for that save. A second model
//   of the run (created at the first copy) loads the copy and scores the probe when its rollouts
//   are in; the copy is deleted once scored. The step awaits the score before it returns, so its
//   record still carries its own mismatch_kl. Scorings on the second model are serialised (a
//   load and its forward never interleave with another step's);
// - they are not, on a trainer without that (SkyRL FSDP serves one model; no checkpoint delete
//   route): optim_step waits for them and their forward.
// A copy costs the trainer a save and a load; it is made only when the alternative is waiting.
import type { TrainerModel } from '@anneal/engines';
import type { Rollout } from '@anneal/envs';
import { TRAINER_BACKEND_TRAITS } from '@anneal/protocol';
import { probeMismatch, type MismatchKl } from './mismatch-probe.ts';
import { scoredAtTemperature } from './scoring-temperature.ts';

/** The weights one lagged step's probe is scored at. */
export interface ProbeWeights {
  /** k1, k3 of the probe at θ_{s−1} once its rollouts are in. */
  score(rollouts: Promise<readonly Rollout[]>, step: number): Promise<MismatchKl | null>;
  /** Called when forward_backward has returned: what optim_step must wait for (`scored`: the
   * probe scored, when it is scored on the policy model). */
  beforeUpdate(scored: Promise<unknown>): Promise<unknown>;
  /** Called once the step's training is over (also when it failed): a probe not scored on the
   * policy model or a copy by then is not scored. */
  close(): void;
}

export interface ProbeWeightsOptions {
  /** A fresh model of the run on the trainer (the second model a copy is loaded into). */
  createModel: () => Promise<TrainerModel>;
  /** `spec.rollout.temperature`: the probe is scored at the temperature it was sampled at. */
  temperature: number;
  /** A copy the trainer could not delete (the run goes on; the copy is left on disk). */
  onDeleteFailed: (path: string, error: unknown) => Promise<void>;
}

/** Whether a trainer can score probes on a copy: a second model and a checkpoint delete. */
export function copiesProbeWeights(
  model: TrainerModel,
  backend: keyof typeof TRAINER_BACKEND_TRAITS | undefined,
): boolean {
  const models = backend === undefined ? 'many' : TRAINER_BACKEND_TRAITS[backend].models;
  return models === 'many' && model.deleteWeights !== undefined;
}

/** The probe copy's checkpoint name: unique per model, step and guardrail generation. */
export const probeCopyName = (runId: string, step: number, rollbacks: number) =>
  `${runId}${rollbacks > 0 ? `-g${rollbacks}` : ''}-probe-${step}`;

/** Where the step's probe is scored: decided when its rollouts come in or forward_backward
 * returns, whichever is first. */
type Decision = 'policy' | 'copy' | 'closed' | 'failed';

/** Makes each lagged step's ProbeWeights for the run. */
export class ProbeScoring {
  private probeModel: Promise<TrainerModel> | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    /** copiesProbeWeights: false, optim_step always waits for the probe. */
    readonly copies: boolean,
    private readonly options: ProbeWeightsOptions,
  ) {}

  /** The probe weights of a lagged step that trains `policy` (at θ_{s−1} until its optim_step). */
  forStep(policy: TrainerModel, copyName: string): ProbeWeights {
    const scorer = scoredAtTemperature(policy, this.options.temperature);
    let decision: Decision | null = null;
    let saved: Promise<string> | null = null;
    return {
      score: async (rollouts, step) => {
        let probe: readonly Rollout[];
        try {
          probe = await rollouts;
        } catch (error) {
          decision ??= 'failed';
          if (decision === 'copy') await this.deleteCopy(policy, saved!);
          throw error;
        }
        decision ??= 'policy';
        if (decision === 'closed') {
          throw new Error(
            `mismatch probe of step ${step}: sampled after the step's training ended`,
          );
        }
        if (decision === 'policy') return probeMismatch(scorer, probe, step);
        return this.scoreOnCopy(policy, saved!, probe, step);
      },
      beforeUpdate: (scored) => {
        if (decision === null && this.copies) {
          decision = 'copy';
          saved = policy.saveWeights(copyName);
          saved.catch(() => undefined); // reported by optim_step's wait and by the scoring
          return saved;
        }
        return scored;
      },
      close: () => {
        decision ??= 'closed';
      },
    };
  }

  private async scoreOnCopy(
    policy: TrainerModel,
    saved: Promise<string>,
    probe: readonly Rollout[],
    step: number,
  ): Promise<MismatchKl | null> {
    const path = await saved;
    try {
      return await this.serial(async () => {
        const model = await this.model();
        await model.loadWeights(path, { optimizer: false });
        const scorer = scoredAtTemperature(model, this.options.temperature);
        return probeMismatch(scorer, probe, step);
      });
    } finally {
      await this.deleteCopy(policy, saved);
    }
  }

  private model(): Promise<TrainerModel> {
    if (this.probeModel === null) {
      this.probeModel = this.options.createModel();
      this.probeModel.catch(() => (this.probeModel = null)); // the next copy tries again
    }
    return this.probeModel;
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Deletes a copy once saved (a save that failed left nothing to delete). */
  private async deleteCopy(policy: TrainerModel, saved: Promise<string>): Promise<void> {
    const path = await saved.catch(() => null);
    if (path === null) return;
    try {
      await policy.deleteWeights!(path);
    } catch (error) {
      await this.options.onDeleteFailed(path, error);
    }
  }
}
