// GRPO sampler exports and serving names: one export name per step (SkyRL/Tinker refuse a reused
// checkpoint name with a 409); each replaced policy export deleted on the trainer once no batch
// samples from it; with rollout.maxPolicyLag ≥ 1 one serving name per version, released from the
// inference engine only when no launched batch pins it (docs/recipe.md "Pipelined GRPO").
import type { TrainerModel } from '@anneal/engines';
import { describe, expect, it } from 'vitest';
import { PolicyVersions, type ServedVersion } from './policy-versions.ts';
import { policyServingName, samplerExportName } from './setup.ts';

function deps(fail = false) {
  const deleted: string[] = [];
  const released: string[] = [];
  const model: Pick<TrainerModel, 'deleteSamplerWeights'> = {
    deleteSamplerWeights: async (path) => {
      deleted.push(path);
      if (fail) throw new Error('HTTP 425: Checkpoint is still being created');
      return true;
    },
  };
  const inference = {
    releaseWeights: async (name: string) => {
      released.push(name);
      if (fail) throw new Error('unload failed');
    },
  };
  return { deps: { model, inference }, deleted, released };
}

const policyExport = (version: number, name = 'run-policy'): ServedVersion => ({
  version,
  name,
  path: `tinker://m/run-sampler-${version}`,
  policyExport: true,
});

describe('GRPO sampler exports', () => {
  it('never reuses an export name within a run', () => {
    const names = [0, 1, 2, 3, 4].map((step) => samplerExportName('run-7', step));
    expect(new Set(names).size).toBe(5);
    expect(names[3]).toBe('run-7-sampler-3');
    expect(names.every((n) => /^[a-zA-Z0-9_-]+$/.test(n))).toBe(true);
  });

  it('lag 0: one stable serving name; lag ≥ 1: one name per version', () => {
    expect(policyServingName('run-7', 0, 3)).toBe('run-7-policy');
    expect(policyServingName('run-7', 1, 3)).toBe('run-7-policy-v3');
    expect(policyServingName('run-7', 1, 4)).not.toBe(policyServingName('run-7', 1, 3));
  });

  it('lag 0: deletes the replaced policy export, never the reference export, releases no name', async () => {
    const { deps: d, deleted, released } = deps();
    const versions = new PolicyVersions(d, {
      version: 0,
      name: 'run-policy',
      path: 'tinker://m/run-reference',
      policyExport: false,
    });
    await versions.adopt(policyExport(1));
    expect(deleted).toEqual([]); // the step-0 policy was the reference export
    await versions.adopt(policyExport(2));
    await versions.adopt(policyExport(3));
    expect(deleted).toEqual(['tinker://m/run-sampler-1', 'tinker://m/run-sampler-2']);
    expect(released).toEqual([]); // the stable name stays served
    expect(versions.current).toMatchObject({ version: 3, path: 'tinker://m/run-sampler-3' });
    expect(versions.served()).toEqual([3]);
  });

  it('keeps a pinned version served and its export on disk until its batch unpins it', async () => {
    const { deps: d, deleted, released } = deps();
    const versions = new PolicyVersions(d, policyExport(0, 'p-v0'));
    const batch = versions.pin();
    expect(batch).toMatchObject({ version: 0, name: 'p-v0' });
    await versions.adopt(policyExport(1, 'p-v1'));
    await versions.adopt(policyExport(2, 'p-v2'));
    // v1 was never pinned: released at once; v0 is still sampled by the batch
    expect(released).toEqual(['p-v1']);
    expect(deleted).toEqual(['tinker://m/run-sampler-1']);
    expect(versions.served()).toEqual([0, 2]);
    await versions.unpin(batch.version);
    expect(released).toEqual(['p-v1', 'p-v0']);
    expect(deleted).toEqual(['tinker://m/run-sampler-1', 'tinker://m/run-sampler-0']);
    expect(versions.served()).toEqual([2]);
    // the current version is never released, pinned or not
    const next = versions.pin();
    await versions.unpin(next.version);
    expect(versions.served()).toEqual([2]);
    await expect(versions.unpin(2)).rejects.toThrow(/not pinned/);
  });

  it('keeps going when the engine cannot release or the backend cannot delete (best effort)', async () => {
    const { deps: d, deleted, released } = deps(true);
    const versions = new PolicyVersions(d, policyExport(4, 'p-v4'));
    await expect(versions.adopt(policyExport(5, 'p-v5'))).resolves.toBeUndefined();
    expect(released).toEqual(['p-v4']);
    expect(deleted).toEqual(['tinker://m/run-sampler-4']);
    const plain = new PolicyVersions({ model: {}, inference: {} }, policyExport(0));
    await plain.adopt(policyExport(1));
    expect(plain.current.path).toBe('tinker://m/run-sampler-1');
  });
});
