// The mismatch probe's forward is sent beside forward_backward, not after it (step.ts,
// docs/performance.md "Pipeline efficiency"). That is exact because a forward is gradient-free
// and forward_backward leaves the weights alone until optim_step: on the real embedded engines
// (TypeScript trainer, ONNX sampler), a lagged run seeded alike gives the same mismatch_kl and
// the same update whether the probe's forward runs on the trainer after forward_backward (the
// old path) or before it.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  ByteTokenizer,
  EmbeddedInferenceEngine,
  EmbeddedTrainer,
  type TrainerEngine,
  type TrainerModel,
} from '@anneal/engines';
import { builtinTasks } from '@anneal/envs';
import { validateRunSpec } from '@anneal/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryContext, specOfKind } from '../../../test/executors/fakes.ts';
import { builtinDataCatalog } from '../../resources/data/builtin-catalog.ts';
import { METRIC } from '../metrics.ts';
import type { RunResources } from '../types.ts';
import { runGrpo } from './index.ts';

const TINY = { vocabSize: 264, blockSize: 256, nLayer: 1, nHead: 2, nEmbd: 32 };
const STEPS = 3;

/** Which the policy model's trainer runs first at a lagged step: forward_backward, then the
 * probe's forward (the old path), or the probe's forward, then forward_backward. */
type Order = 'forward after forward_backward' | 'forward before forward_backward';

/** A latch per step, opened once. */
class Latches {
  private readonly opened = new Map<number, () => void>();
  private readonly waits = new Map<number, Promise<void>>();
  wait(step: number): Promise<void> {
    if (!this.waits.has(step)) {
      this.waits.set(step, new Promise((resolve) => this.opened.set(step, resolve)));
    }
    return this.waits.get(step)!;
  }
  open(step: number): void {
    void this.wait(step);
    this.opened.get(step)!();
  }
}

/** The policy model (the run's first) with its trainer calls put in `order`: with lag 1 and
 * no IS options, forward_backward call n is step n's, forward call n step n + 1's probe. */
function ordered(model: TrainerModel, order: Order, calls: string[]): TrainerModel {
  let backwards = 0;
  let forwards = 0;
  const trained = new Latches();
  const probed = new Latches();
  return new Proxy(model, {
    get(target, key, receiver) {
      if (key === 'forwardBackward') {
        return async (...args: Parameters<TrainerModel['forwardBackward']>) => {
          const step = ++backwards;
          if (order === 'forward before forward_backward' && step > 1) await probed.wait(step);
          calls.push(`forward_backward ${step}`);
          const result = await target.forwardBackward(...args);
          trained.open(step);
          return result;
        };
      }
      if (key === 'forward') {
        return async (...args: Parameters<TrainerModel['forward']>) => {
          const step = ++forwards + 1;
          if (order === 'forward after forward_backward') await trained.wait(step);
          calls.push(`forward ${step}`);
          const result = await target.forward(...args);
          probed.open(step);
          return result;
        };
      }
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
}

let dir: string;
let trainer: EmbeddedTrainer;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-probe-order-'));
  trainer = new EmbeddedTrainer({ artifactDir: dir, baseModels: { tiny: TINY } });
});

afterAll(async () => {
  await trainer?.close();
  await rm(dir, { recursive: true, force: true });
});

async function lagOneRun(order: Order, run: number) {
  // a sampler of its own: its first weights (the run's reference) are never evicted
  const inference = new EmbeddedInferenceEngine({ threads: 1 });
  let created = 0;
  const calls: string[] = []; // the trainer's calls, in the order it got them
  const engine: TrainerEngine = {
    capabilities: trainer.capabilities,
    createModel: async (options) => {
      const model = await trainer.createModel(options);
      return created++ === 0 ? ordered(model, order, calls) : model;
    },
    close: () => Promise.resolve(),
  };
  const resources: RunResources = {
    tokenizer: new ByteTokenizer(),
    trainer: engine,
    inference,
    model: { label: 'tiny', baseModel: 'tiny', checkpoint: null },
    data: builtinDataCatalog(builtinTasks(0)),
  };
  const parsed = validateRunSpec({
    kind: 'grpo',
    steps: STEPS,
    seed: 5,
    checkpointInterval: STEPS,
    rollout: { groupSize: 4, promptsPerStep: 3, maxTokens: 24, maxPolicyLag: 1 },
    optimizer: { learningRate: 1e-3 },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const runId = `run_01JMPRBE${String(run).padStart(18, '0')}`;
  const ctx = memoryContext(specOfKind('grpo', parsed.value), resources, {
    runId,
    artifactDir: path.join(dir, runId),
  });
  try {
    await runGrpo(ctx);
  } finally {
    await inference.close();
  }
  return { steps: ctx.steps, calls };
}

describe('mismatch probe forward beside forward_backward (embedded engines)', () => {
  it('same mismatch_kl and the same update whether its forward runs after forward_backward or before it', async () => {
    const { steps: after, calls: afterCalls } = await lagOneRun(
      'forward after forward_backward',
      1,
    );
    const { steps: before, calls: beforeCalls } = await lagOneRun(
      'forward before forward_backward',
      2,
    );
    // the trainer got the probe's forward after forward_backward in one run, before it in the other
    const trainerCalls = (step: number) => [`forward_backward ${step}`, `forward ${step}`];
    expect(afterCalls).toEqual(['forward_backward 1', ...trainerCalls(2), ...trainerCalls(3)]);
    expect(beforeCalls).toEqual([
      'forward_backward 1',
      ...trainerCalls(2).reverse(),
      ...trainerCalls(3).reverse(),
    ]);
    for (let step = 1; step <= STEPS; step++) {
      const a = after.get(step)!;
      const b = before.get(step)!;
      expect(a['policy_lag/max'], `step ${step}`).toBe(step === 1 ? 0 : 1);
      if (step > 1) {
        // the probe's own tokens, not the batch's
        expect(a[METRIC.mismatchKlTokens]!).toBeGreaterThan(0);
        expect(a[METRIC.mismatchKlTokens]).not.toBe(a[METRIC.trainedTokens]);
      }
      for (const key of [
        METRIC.mismatchKl,
        METRIC.mismatchKlTokens,
        METRIC.trainInferenceKl,
        METRIC.isRatioMean,
        METRIC.loss,
        METRIC.gradNorm,
      ]) {
        expect(a[key], `step ${step} ${key}`).not.toBeUndefined();
        expect(b[key], `step ${step} ${key}`).toBe(a[key]);
      }
    }
  }, 120_000);
});
