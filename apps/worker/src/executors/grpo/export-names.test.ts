// GRPO sampler exports: one name per step (SkyRL/Tinker refuse a reused checkpoint name with a
// 409), and each replaced policy export deleted on the trainer once the next one is served.
import type { TrainerModel } from '@anneal/engines';
import { describe, expect, it } from 'vitest';
import { adoptPolicyExport, samplerExportName } from './setup.ts';

function modelWithDeletes(fail = false): { model: TrainerModel; deleted: string[] } {
  const deleted: string[] = [];
  const unused = () => Promise.reject(new Error('not used'));
  const model: TrainerModel = {
    id: 'model-1',
    forward: unused,
    forwardBackward: unused,
    optimStep: unused,
    saveWeights: unused,
    loadWeights: unused,
    saveWeightsForSampler: unused,
    deleteSamplerWeights: async (path) => {
      deleted.push(path);
      if (fail) throw new Error('HTTP 425: Checkpoint is still being created');
      return true;
    },
  };
  return { model, deleted };
}

describe('GRPO sampler exports', () => {
  it('never reuses an export name within a run', () => {
    const names = [0, 1, 2, 3, 4].map((step) => samplerExportName('run-7', step));
    expect(new Set(names).size).toBe(5);
    expect(names[3]).toBe('run-7-sampler-3');
    expect(names.every((n) => /^[a-zA-Z0-9_-]+$/.test(n))).toBe(true);
  });

  it('deletes the replaced policy export, never the reference export', async () => {
    const { model, deleted } = modelWithDeletes();
    const state = {
      model,
      samplerPath: 'tinker://m/run-reference',
      samplerPathIsPolicyExport: false,
    };
    await adoptPolicyExport(state, 'tinker://m/run-sampler-1');
    expect(deleted).toEqual([]); // the step-0 policy was the reference export
    await adoptPolicyExport(state, 'tinker://m/run-sampler-2');
    await adoptPolicyExport(state, 'tinker://m/run-sampler-3');
    expect(deleted).toEqual(['tinker://m/run-sampler-1', 'tinker://m/run-sampler-2']);
    expect(state).toMatchObject({
      samplerPath: 'tinker://m/run-sampler-3',
      samplerPathIsPolicyExport: true,
    });
  });

  it('keeps going when the backend cannot delete (best effort)', async () => {
    const { model, deleted } = modelWithDeletes(true);
    const state = {
      model,
      samplerPath: 'tinker://m/run-sampler-4',
      samplerPathIsPolicyExport: true,
    };
    await expect(adoptPolicyExport(state, 'tinker://m/run-sampler-5')).resolves.toBeUndefined();
    expect(deleted).toEqual(['tinker://m/run-sampler-4']);
    const { deleteSamplerWeights: _, ...withoutDelete } = model;
    const plain = { model: withoutDelete, samplerPath: 'a', samplerPathIsPolicyExport: true };
    await adoptPolicyExport(plain, 'b');
    expect(plain.samplerPath).toBe('b');
  });
});
