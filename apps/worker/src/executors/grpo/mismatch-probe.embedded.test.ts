// Where a lagged step's mismatch probe is scored (probe-weights.ts): on the policy model before
// optim_step, or on a second model loaded from a copy of the trained weights (θ_{s−1}) saved
// before forward_backward — which takes the probe off lag 1's critical path. That is exact
// because a saved checkpoint loads back bit for bit and forward is gradient-free: on the real
// embedded engines (TypeScript trainer, ONNX sampler), a lagged run seeded alike gives the same
// mismatch_kl and the same update either way, and leaves no copy on disk.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
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

type Way = 'policy' | 'copy';

/** The calls a model got, by kind. */
interface Calls {
  policyForwards: number;
  probeForwards: number;
  probeLoads: number;
}

/** The policy model (the run's first) as the `policy` way needs it: without a checkpoint delete,
 * probeWeightsMode scores on it. */
function withoutDelete(model: TrainerModel): TrainerModel {
  return new Proxy(model, {
    get: (target, key, receiver) =>
      key === 'deleteWeights' ? undefined : (Reflect.get(target, key, receiver) as unknown),
  });
}

/** Counts `forward` calls (and `loadWeights` into `loads`) of a model. */
function counting(model: TrainerModel, forwards: () => void, loads?: () => void): TrainerModel {
  return new Proxy(model, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (key === 'forward') {
        return (...args: Parameters<TrainerModel['forward']>) => {
          forwards();
          return target.forward(...args);
        };
      }
      if (key === 'loadWeights' && loads) {
        return (...args: Parameters<TrainerModel['loadWeights']>) => {
          loads();
          return target.loadWeights(...args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
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

async function lagOneRun(way: Way, run: number) {
  // a sampler of its own: its first weights (the run's reference) are never evicted
  const inference = new EmbeddedInferenceEngine({ threads: 1 });
  let created = 0;
  const calls: Calls = { policyForwards: 0, probeForwards: 0, probeLoads: 0 };
  const engine: TrainerEngine = {
    capabilities: trainer.capabilities,
    createModel: async (options) => {
      const model = await trainer.createModel(options);
      if (created++ === 0) {
        const policy = counting(model, () => calls.policyForwards++);
        return way === 'policy' ? withoutDelete(policy) : policy;
      }
      return counting(
        model,
        () => calls.probeForwards++,
        () => calls.probeLoads++,
      );
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
  return { steps: ctx.steps, calls, runId };
}

describe('mismatch probe scored on the policy model or on a copy (embedded engines)', () => {
  it('same mismatch_kl and the same update either way; the copies are deleted', async () => {
    const policy = await lagOneRun('policy', 1);
    const copy = await lagOneRun('copy', 2);
    // the policy way: one probe forward per lagged step on the policy model, no second model
    expect(policy.calls).toEqual({ policyForwards: STEPS - 1, probeForwards: 0, probeLoads: 0 });
    // the copy way: none on the policy model; the second model loads each step's copy, scores it
    expect(copy.calls).toEqual({
      policyForwards: 0,
      probeForwards: STEPS - 1,
      probeLoads: STEPS - 1,
    });
    expect(await probeCopiesOnDisk(copy.runId)).toEqual([]);
    for (let step = 1; step <= STEPS; step++) {
      const a = policy.steps.get(step)!;
      const b = copy.steps.get(step)!;
      expect(a['policy_lag/max'], `step ${step}`).toBe(step === 1 ? 0 : 1);
      if (step > 1) {
        // the probe's own tokens, not the batch's
        expect(a[METRIC.mismatchKlTokens]!).toBeGreaterThan(0);
        expect(a[METRIC.mismatchKlTokens]).not.toBe(a[METRIC.trainedTokens]);
        expect(b['phase_seconds/probe'], `step ${step}`).toBeGreaterThanOrEqual(0);
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

/** `<artifactDir>/<model id>/weights/<name>` directories of the run's probe copies. */
async function probeCopiesOnDisk(runId: string): Promise<string[]> {
  const found: string[] = [];
  for (const model of await readdir(dir)) {
    const weights = path.join(dir, model, 'weights');
    const names = await readdir(weights).catch(() => [] as string[]);
    found.push(...names.filter((n) => n.startsWith(`${runId}-probe-`)));
  }
  return found;
}
