// Where a lagged step's probe is scored, and a copy's life (probe-weights.ts).
import { describe, expect, it } from 'vitest';
import type { ForwardResult, TrainerModel } from '@anneal/engines';
import type { Rollout } from '@anneal/envs';
import { ProbeScoring, copiesProbeWeights } from './probe-weights.ts';

/** A policy model that logs its saves, deletes and forwards. */
function policy(log: string[]): TrainerModel {
  return {
    saveWeights: (name: string) => {
      log.push(`save ${name}`);
      return Promise.resolve(`mem://${name}`);
    },
    deleteWeights: (path: string) => {
      log.push(`delete ${path}`);
      return Promise.resolve(true);
    },
    forward: (): Promise<ForwardResult> => {
      log.push('forward');
      return Promise.resolve({ logprobs: [], metrics: {} });
    },
  } as unknown as TrainerModel;
}

const scoring = (created: string[]) =>
  new ProbeScoring(true, {
    createModel: () => {
      created.push('model');
      return Promise.reject(new Error('not reached'));
    },
    temperature: 1,
    onDeleteFailed: () => Promise.resolve(),
  });

describe('probe weights', () => {
  it('copies where the trainer serves several models and deletes checkpoints', () => {
    const model = policy([]);
    const { deleteWeights: _, ...noDelete } = model;
    expect(copiesProbeWeights(model, 'skyrl-jax')).toBe(true);
    expect(copiesProbeWeights(model, 'tinker')).toBe(true);
    expect(copiesProbeWeights(model, 'embedded')).toBe(true);
    expect(copiesProbeWeights(model, undefined)).toBe(true);
    // SkyRL FSDP serves one model per worker group
    expect(copiesProbeWeights(model, 'skyrl-fsdp')).toBe(false);
    expect(copiesProbeWeights(noDelete as TrainerModel, 'tinker')).toBe(false);
  });

  it('rollouts in before forward_backward returns: scored on the policy model, no copy', async () => {
    const log: string[] = [];
    const created: string[] = [];
    const weights = scoring(created).forStep(policy(log), 'run-probe-2');
    const scored = weights.score(Promise.resolve([] as Rollout[]), 2);
    await expect(scored).resolves.toBeNull(); // an empty probe has no tokens
    await weights.beforeUpdate(scored);
    weights.close();
    expect(log).toEqual([]); // an empty probe needs no forward; above all, no save
    expect(created).toEqual([]);
  });

  it('rollouts not in when forward_backward returns: a copy, deleted even if the probe then fails', async () => {
    const log: string[] = [];
    const created: string[] = [];
    const weights = scoring(created).forStep(policy(log), 'run-probe-2');
    let fail!: (error: Error) => void;
    const rollouts = new Promise<Rollout[]>((_, reject) => (fail = reject));
    const scored = weights.score(rollouts, 2);
    await expect(weights.beforeUpdate(scored)).resolves.toBe('mem://run-probe-2');
    weights.close();
    fail(new Error('sampler down'));
    await expect(scored).rejects.toThrow('sampler down');
    expect(log).toEqual(['save run-probe-2', 'delete mem://run-probe-2']);
    expect(created).toEqual([]);
  });

  it('a trainer that cannot copy: optim_step waits for the probe; a probe after training ends is refused', async () => {
    const log: string[] = [];
    const noCopy = new ProbeScoring(false, {
      createModel: () => Promise.reject(new Error('not reached')),
      temperature: 1,
      onDeleteFailed: () => Promise.resolve(),
    });
    const weights = noCopy.forStep(policy(log), 'run-probe-2');
    let arrive!: (r: Rollout[]) => void;
    const scored = weights.score(new Promise<Rollout[]>((resolve) => (arrive = resolve)), 2);
    const wait = weights.beforeUpdate(scored);
    expect(wait).toBe(scored);
    weights.close(); // the step failed before its optim_step
    arrive([]);
    await expect(scored).rejects.toThrow("sampled after the step's training ended");
    expect(log).toEqual([]);
  });
});
