// Where a lagged step's mismatch probe is scored (probe-weights.ts): on the policy model before
// optim_step, or — when its rollouts come in after forward_backward — on a second model loaded
// from a copy of the trained weights (θ_{s−1}) saved before optim_step, which takes the probe off
// lag 1's critical path. That is exact because a saved checkpoint loads back bit for bit and a
// forward is gradient-free: on the real embedded engines (TypeScript trainer, ONNX sampler), a
// lagged run seeded alike gives the same mismatch_kl and the same update either way, and leaves
// no copy on disk.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  ByteTokenizer,
  EmbeddedInferenceEngine,
  EmbeddedTrainer,
  type InferenceEngine,
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
import { samplingSeed } from '../common/sampling-seed.ts';

const TINY = { vocabSize: 264, blockSize: 256, nLayer: 1, nHead: 2, nEmbd: 32 };
const STEPS = 3;
const SEED = 5;
/** The probe's first-turn seeds (step.ts: samplingSeed(seed, `mismatch-probe:<step>:<i>`)). */
const PROBE_SEEDS = new Map(
  Array.from({ length: STEPS + 1 }, (_, step) =>
    Array.from({ length: 64 }, (_, i) => [samplingSeed(SEED, `mismatch-probe:${step}:${i}`), step]),
  ).flat() as Array<[number, number]>,
);

type Way = 'policy' | 'copy';

/** The calls a model got, by kind. */
interface Calls {
  policyForwards: number;
  policyOptimSteps: number;
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

/** `model`, each `forward`, `optimStep` and `loadWeights` call reported to `count` first. */
function counting(model: TrainerModel, count: (call: string) => void): TrainerModel {
  return new Proxy(model, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const fn = (value as (...a: unknown[]) => unknown).bind(target);
      if (key === 'forward' || key === 'optimStep' || key === 'loadWeights') {
        return (...args: unknown[]) => {
          count(key);
          return fn(...args);
        };
      }
      return fn;
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
  const engine0 = new EmbeddedInferenceEngine({ threads: 1 });
  const calls: Calls = { policyForwards: 0, policyOptimSteps: 0, probeForwards: 0, probeLoads: 0 };
  const waiters: Array<() => void> = [];
  // The copy way: each probe's rollouts are held until its step's optim_step has been sent, so
  // they come in after forward_backward and the step copies (the policy way would wait forever).
  const inference: InferenceEngine =
    way === 'policy'
      ? engine0
      : new Proxy(engine0, {
          get(target, key, receiver) {
            const value = Reflect.get(target, key, receiver) as unknown;
            if (key !== 'sample') {
              return typeof value === 'function' ? value.bind(target) : value;
            }
            return async (...args: Parameters<InferenceEngine['sample']>) => {
              const step = PROBE_SEEDS.get(args[0].seed ?? -1);
              while (step !== undefined && calls.policyOptimSteps < step) {
                await new Promise<void>((resolve) => waiters.push(resolve));
              }
              return target.sample(...args);
            };
          },
        });
  let created = 0;
  const engine: TrainerEngine = {
    capabilities: trainer.capabilities,
    createModel: async (options) => {
      const model = await trainer.createModel(options);
      if (created++ === 0) {
        const policy = counting(model, (call) => {
          if (call === 'forward') calls.policyForwards++;
          if (call === 'optimStep') {
            calls.policyOptimSteps++;
            for (const wake of waiters.splice(0)) wake();
          }
        });
        return way === 'policy' ? withoutDelete(policy) : policy;
      }
      return counting(model, (call) => {
        if (call === 'forward') calls.probeForwards++;
        if (call === 'loadWeights') calls.probeLoads++;
      });
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
    seed: SEED,
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
    await engine0.close();
  }
  return { steps: ctx.steps, calls, runId };
}

describe('mismatch probe scored on the policy model or on a copy (embedded engines)', () => {
  it('same mismatch_kl and the same update either way; the copies are deleted', async () => {
    const policy = await lagOneRun('policy', 1);
    const copy = await lagOneRun('copy', 2);
    // the policy way: one probe forward per lagged step on the policy model, no second model
    expect(policy.calls).toEqual({
      policyForwards: STEPS - 1,
      policyOptimSteps: STEPS,
      probeForwards: 0,
      probeLoads: 0,
    });
    // the copy way: none on the policy model; the second model loads each step's copy, scores it
    expect(copy.calls).toEqual({
      policyForwards: 0,
      policyOptimSteps: STEPS,
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
