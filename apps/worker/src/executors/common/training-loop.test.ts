import { ByteTokenizer } from '@anneal/engines';
import { validateRunSpec, type RunSpec } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { METRIC, phaseKey } from '../metrics.ts';
import {
  ScriptedInference,
  ShiftedTrainerModel,
  memoryContext,
} from '../../../test/executors/fakes.ts';
import type { RunResources } from '../types.ts';
import { checkpointName, runTrainingLoop } from './training-loop.ts';

function sftSpec(): RunSpec {
  const parsed = validateRunSpec({ kind: 'sft', steps: 7, checkpointInterval: 3 });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

const resources = {
  tokenizer: new ByteTokenizer(),
  inference: new ScriptedInference(() => ''),
  model: { label: 'base', baseModel: 'x', checkpoint: null },
} as unknown as RunResources;

describe('runTrainingLoop', () => {
  it('runs steps 1..N, commits each once, checkpoints every interval and at the end', async () => {
    const ctx = memoryContext(sftSpec(), resources);
    const model = new ShiftedTrainerModel(0);
    const result = await runTrainingLoop({
      ctx,
      model,
      doneSteps: 0,
      totalSteps: 7,
      checkpointInterval: 3,
      runStep: (step) => Promise.resolve({ [METRIC.loss]: 10 - step }),
    });
    expect(ctx.commitOrder).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(ctx.checkpoints.map((c) => c.step)).toEqual([3, 6, 7]);
    expect(model.saved).toEqual([3, 6, 7].map((s) => checkpointName(ctx.runId, s)));
    expect(ctx.steps.get(3)![phaseKey('checkpoint')]).toBeGreaterThanOrEqual(0);
    expect(ctx.steps.get(2)![phaseKey('checkpoint')]).toBeUndefined();
    expect(result).toMatchObject({
      lastStep: 7,
      stopped: false,
      checkpointPath: `mem://${checkpointName(ctx.runId, 7)}`,
    });
    expect(result.lastMetrics[METRIC.loss]).toBe(3);
  });

  it('resumes after the checkpointed step and never re-numbers', async () => {
    const ctx = memoryContext(sftSpec(), resources, { resumeFrom: { step: 3, path: 'mem://c3' } });
    const result = await runTrainingLoop({
      ctx,
      model: new ShiftedTrainerModel(0),
      doneSteps: 3,
      totalSteps: 7,
      checkpointInterval: 3,
      runStep: () => Promise.resolve({}),
    });
    expect(ctx.commitOrder).toEqual([4, 5, 6, 7]);
    expect(result.lastStep).toBe(7);
  });

  it('stops at a step boundary and checkpoints the steps since the last checkpoint', async () => {
    const ctx = memoryContext(sftSpec(), resources, {
      onCommit: (step, c) => {
        if (step === 4) c.controller.abort();
      },
    });
    const model = new ShiftedTrainerModel(0);
    const result = await runTrainingLoop({
      ctx,
      model,
      doneSteps: 0,
      totalSteps: 7,
      checkpointInterval: 3,
      runStep: () => Promise.resolve({}),
    });
    expect(ctx.commitOrder).toEqual([1, 2, 3, 4]);
    expect(ctx.checkpoints.map((c) => c.step)).toEqual([3, 4]);
    expect(result).toMatchObject({ lastStep: 4, stopped: true });
  });

  it('does not save again when stopped right after a checkpoint', async () => {
    const ctx = memoryContext(sftSpec(), resources, {
      onCommit: (step, c) => {
        if (step === 3) c.controller.abort();
      },
    });
    const model = new ShiftedTrainerModel(0);
    await runTrainingLoop({
      ctx,
      model,
      doneSteps: 0,
      totalSteps: 7,
      checkpointInterval: 3,
      runStep: () => Promise.resolve({}),
    });
    expect(model.saved).toHaveLength(1);
    expect(ctx.checkpoints.map((c) => c.step)).toEqual([3]);
  });
});
