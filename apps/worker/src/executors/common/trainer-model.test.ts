// What a run's trainer model is opened with, on the real embedded trainer: a fork of another
// run's checkpoint loads its weights only (a fresh optimizer: with every advantage 0 its weights
// do not move), unless the spec says `model.checkpoint.loadOptimizer: true`; a resume or a
// rollback of the run's own checkpoint restores the Adam moments and step count too.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedTrainer, type Datum, type EmbeddedTrainerModel } from '@anneal/engines';
import { validateRunSpec } from '@anneal/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryContext, specOfKind } from '../../../test/executors/fakes.ts';
import type { RunResources } from '../types.ts';
import { openTrainerModel, reopenModelAt } from './trainer-model.ts';

const TINY = { vocabSize: 264, blockSize: 64, nLayer: 1, nHead: 2, nEmbd: 16 };
const PARENT = 'run_01JTEST0000000000000000099';
const adam = {
  learningRate: 3e-3,
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-12,
  weightDecay: 0,
  gradClipNorm: 0,
};

const tokens = [262, 104, 105, 263, 104, 105, 256];
const sft: Datum = {
  modelInput: tokens.slice(0, -1),
  lossFnInputs: {
    target_tokens: Int32Array.from(tokens.slice(1)),
    weights: Float32Array.from([0, 0, 1, 1, 1, 1]),
  },
};
/** GRPO data with no learning signal: every advantage 0. */
const zeroAdvantage: Datum = {
  modelInput: sft.modelInput,
  lossFnInputs: {
    target_tokens: sft.lossFnInputs['target_tokens']!,
    logprobs: new Float32Array(6).fill(-1),
    advantages: new Float32Array(6),
  },
};

describe('openTrainerModel: fork vs resume', () => {
  let dir: string;
  let trainer: EmbeddedTrainer;
  let parentPath: string;
  let parentParams: number[];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-fork-'));
    trainer = new EmbeddedTrainer({ artifactDir: dir, threads: 1, baseModels: { tiny: TINY } });
    const parent = await trainer.createModel({ baseModel: 'tiny', loraRank: 0, seed: 1 });
    for (let i = 0; i < 4; i++) {
      await parent.forwardBackward([sft], 'cross_entropy');
      await parent.optimStep(adam);
    }
    parentPath = await parent.saveWeights('parent-4');
    parentParams = Array.from(parent.params);
  });
  afterAll(async () => {
    await trainer.close();
    await rm(dir, { recursive: true, force: true });
  });

  function context(
    loadOptimizer?: boolean,
    resumeFrom: { step: number; path: string } | null = null,
  ) {
    const checkpoint = { run: PARENT, ...(loadOptimizer !== undefined && { loadOptimizer }) };
    const parsed = validateRunSpec({ kind: 'grpo', model: { checkpoint }, steps: 3 });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const resources = {
      trainer,
      model: { label: PARENT, baseModel: 'tiny', checkpoint: parentPath },
    } as unknown as RunResources;
    return memoryContext(specOfKind('grpo', parsed.value), resources, { resumeFrom });
  }

  async function zeroSteps(model: EmbeddedTrainerModel, n: number): Promise<number[]> {
    for (let i = 0; i < n; i++) {
      await model.forwardBackward([zeroAdvantage], 'importance_sampling');
      await model.optimStep(adam);
    }
    return Array.from(model.params);
  }

  it('a fork whose advantages are all 0 leaves the parent weights bit for bit after 3 steps', async () => {
    const { model } = await openTrainerModel(context(), 'lm');
    expect(await zeroSteps(model as EmbeddedTrainerModel, 3)).toEqual(parentParams);
  });

  it("model.checkpoint.loadOptimizer: true carries the parent's moments, which move the weights", async () => {
    const { model } = await openTrainerModel(context(true), 'lm');
    const after = await zeroSteps(model as EmbeddedTrainerModel, 3);
    expect(after.filter((p, i) => p !== parentParams[i]).length).toBeGreaterThan(0);
  });

  it("a resume and a rollback of the run's own checkpoint restore the moments", async () => {
    // The parent continued one step is what a restored optimizer must reproduce exactly.
    const reference = await trainer.createModel({ baseModel: 'tiny', loraRank: 0, seed: 1 });
    await reference.loadWeights(parentPath, { optimizer: true });
    const expected = await zeroSteps(reference, 1);
    expect(expected).not.toEqual(parentParams);
    const ctx = context(undefined, { step: 4, path: parentPath });
    const { model, doneSteps } = await openTrainerModel(ctx, 'lm');
    expect(doneSteps).toBe(4);
    expect(await zeroSteps(model as EmbeddedTrainerModel, 1)).toEqual(expected);
    const rolledBack = await reopenModelAt(ctx, { step: 4, path: parentPath }, 'lm', model);
    expect(await zeroSteps(rolledBack as EmbeddedTrainerModel, 1)).toEqual(expected);
    // Before the run's first checkpoint a rollback reopens the starting weights as a fork.
    const start = await reopenModelAt(ctx, { step: 0, path: null }, 'lm', rolledBack);
    expect(await zeroSteps(start as EmbeddedTrainerModel, 2)).toEqual(parentParams);
  });
});
