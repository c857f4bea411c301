// Which way a trainer scores lagged steps' probes, and the copy's life (probe-weights.ts).
import { describe, expect, it } from 'vitest';
import type { TrainerModel } from '@anneal/engines';
import { ProbeScoring, probeWeightsMode } from './probe-weights.ts';

/** A policy model that saves and deletes (nothing else is called on it). */
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
  } as unknown as TrainerModel;
}

describe('probe weights', () => {
  it('copies where the trainer serves several models and deletes checkpoints', () => {
    const log: string[] = [];
    const model = policy(log);
    const { deleteWeights: _, ...noDelete } = model;
    expect(probeWeightsMode(model, 'skyrl-jax')).toBe('copy');
    expect(probeWeightsMode(model, 'tinker')).toBe('copy');
    expect(probeWeightsMode(model, 'embedded')).toBe('copy');
    expect(probeWeightsMode(model, undefined)).toBe('copy');
    // SkyRL FSDP serves one model per worker group
    expect(probeWeightsMode(model, 'skyrl-fsdp')).toBe('policy');
    expect(probeWeightsMode(noDelete as TrainerModel, 'tinker')).toBe('policy');
  });

  it('a copy whose probe failed to sample is deleted all the same, and the failure reported', async () => {
    const log: string[] = [];
    let created = 0;
    const scoring = new ProbeScoring('copy', {
      createModel: () => {
        created++;
        return Promise.reject(new Error('not reached'));
      },
      temperature: 1,
      onDeleteFailed: () => Promise.resolve(),
    });
    const weights = scoring.forStep(policy(log), 'run-probe-2');
    await expect(weights.beforeUpdate(Promise.resolve())).resolves.toBe('mem://run-probe-2');
    const failed = Promise.reject(new Error('sampler down'));
    await expect(weights.score(failed, 2, () => true)).rejects.toThrow('sampler down');
    expect(log).toEqual(['save run-probe-2', 'delete mem://run-probe-2']);
    expect(created).toBe(0);
  });
});
