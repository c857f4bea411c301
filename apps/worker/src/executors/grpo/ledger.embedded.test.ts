// The rollout ledger of a GRPO run on the real embedded engines (TypeScript trainer, ONNX
// sampler), tiny model: every step's records are on disk once committed, and their reward parts,
// advantages, lengths and IS ratios agree with the step record's aggregates; old steps keep their
// seeded sample of groups; `ledger.tokens` adds token ids and both sides' logprobs.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ByteTokenizer, EmbeddedInferenceEngine, EmbeddedTrainer } from '@anneal/engines';
import { builtinTasks, reachedBackend, type ToolCallStatus } from '@anneal/envs';
import {
  LedgerConfig,
  LedgerStepIndex,
  RolloutRecord,
  decodeLogprobs,
  validateRunSpec,
} from '@anneal/protocol';
import {
  REST_FILE,
  ledgerDir,
  listLedgerSteps,
  readLedgerIndex,
  readLedgerStep,
  stepDir,
} from '@anneal/store';
import { STEP_METRICS } from '@anneal/telemetry';
import { recordKey } from '@anneal/protocol';
import { Value } from '@sinclair/typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryContext, specOfKind } from '../../../test/executors/fakes.ts';
import { builtinDataCatalog } from '../../resources/data/builtin-catalog.ts';
import { METRIC, baseRewardKey, rewardKey } from '../metrics.ts';
import type { RunResources } from '../types.ts';
import { runGrpo } from './index.ts';
import { sampleGroups } from './ledger.ts';

const TINY = { vocabSize: 264, blockSize: 256, nLayer: 1, nHead: 2, nEmbd: 32 };
const RUN = (n: number) => `run_01JLEDGER000000000000000${String(n).padStart(2, '0')}`;
const CAPS: LedgerConfig = {
  ...(Value.Default(LedgerConfig, {}) as LedgerConfig),
  keepAllSteps: 2,
  sampleGroups: 1,
};

function grpoSpec(steps: number, tokens: boolean, extra: Record<string, unknown> = {}) {
  const parsed = validateRunSpec({
    kind: 'grpo',
    steps,
    seed: 11,
    checkpointInterval: 2,
    rollout: { groupSize: 4, promptsPerStep: 3, maxTokens: 24 },
    optimizer: { learningRate: 1e-3 },
    ledger: { tokens },
    ...extra,
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return specOfKind('grpo', parsed.value);
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

let dir: string;
let resources: RunResources;
let trainer: EmbeddedTrainer;
let inference: EmbeddedInferenceEngine;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-ledger-'));
  trainer = new EmbeddedTrainer({ artifactDir: dir, baseModels: { tiny: TINY } });
  inference = new EmbeddedInferenceEngine({ threads: 1 });
  resources = {
    tokenizer: new ByteTokenizer(),
    trainer,
    inference,
    model: { label: 'tiny', baseModel: 'tiny', checkpoint: null },
    data: builtinDataCatalog(builtinTasks(0)),
    ledger: CAPS,
  };
});

afterAll(async () => {
  await inference?.close();
  await trainer?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('GRPO rollout ledger (embedded engines)', () => {
  it('records every committed step; reward parts, advantages, ratios agree with the step record; old steps pruned to their sample', async () => {
    const artifactDir = path.join(dir, 'runs', RUN(1));
    const ctx = memoryContext(grpoSpec(4, false), resources, { runId: RUN(1), artifactDir });
    await runGrpo(ctx);
    expect(await listLedgerSteps(artifactDir)).toEqual([1, 2, 3, 4]);
    expect((await readdir(ledgerDir(artifactDir))).sort()).toEqual(
      [1, 2, 3, 4].map((s) => `step-00000${s}`),
    );
    for (const [step, m] of ctx.steps) {
      const index = await readLedgerIndex(artifactDir, step);
      expect(Value.Check(LedgerStepIndex, index), `index of step ${step}`).toBe(true);
      const records = (await readLedgerStep(artifactDir, step))!;
      for (const r of records) expect(Value.Check(RolloutRecord, r), r.id).toBe(true);
      expect(records.every((r) => r.tokens === undefined)).toBe(true);
      const pruned = step <= 4 - CAPS.keepAllSteps;
      expect(index!.pruned).toBe(pruned);
      const kept = pruned ? sampleGroups(11, step, 3, 1) : [0, 1, 2];
      expect(index!.kept).toEqual(sampleGroups(11, step, 3, 1));
      expect(existsSync(path.join(stepDir(artifactDir, step), REST_FILE))).toBe(!pruned);
      expect([...new Set(records.map((r) => r.group))]).toEqual(kept);
      expect(index!.rollouts.map((r) => r.id)).toEqual(records.map((r) => r.id));
      expect(records).toHaveLength(kept.length * 8);
      if (pruned) continue;

      const policy = records.filter((r) => r.role === 'policy');
      const references = records.filter((r) => r.role === 'reference');
      expect(policy.map((r) => r.pairedWith)).toEqual(references.map((r) => r.id));
      expect(policy.every((r) => r.policyVersion === step - 1)).toBe(true);
      const rewards = policy.map((r) => r.rewards!);
      expect(mean(rewards.map((x) => x.reward))).toBeCloseTo(m[rewardKey('all')]!, 12);
      expect(mean(rewards.map((x) => x.baseReward))).toBeCloseTo(m[baseRewardKey('all')]!, 12);
      expect(mean(rewards.map((x) => x.preferenceScore))).toBeCloseTo(
        m[METRIC.preferenceScore]!,
        12,
      );
      expect(mean(rewards.map((x) => x.toolPenalty))).toBeCloseTo(m[METRIC.toolPenalty]!, 12);
      expect(mean(rewards.map((x) => x.lengthPenalty))).toBeCloseTo(m[METRIC.lengthPenalty]!, 12);
      for (const g of [0, 1, 2]) {
        const group = policy.filter((r) => r.group === g);
        const groupMean = mean(group.map((r) => r.rewards!.reward));
        // Â_i = R_i − mean_j R_j (advantage.normalizeStd off)
        for (const r of group) expect(r.advantage).toBeCloseTo(r.rewards!.reward - groupMean, 12);
      }
      const generated = policy.map((r) => r.lengths.generated);
      expect(mean(generated)).toBeCloseTo(m[METRIC.responseTokens]!, 12);
      expect(generated.reduce((a, b) => a + b)).toBe(m[METRIC.rolloutTokens]);
      expect(mean(references.map((r) => r.lengths.generated))).toBeCloseTo(
        m[METRIC.referenceResponseTokens]!,
        12,
      );
      expect(mean(policy.map((r) => r.toolCalls))).toBeCloseTo(m[METRIC.toolCallsPerRollout]!, 12);
      expect(policy.filter((r) => r.truncated).length).toBe(m[METRIC.truncatedRollouts]);
      // token-weighted per-rollout ratios = the step's (fresh) ratio mean and k3
      const ratios = policy.map((r) => r.ratio!);
      const ratioTokens = ratios.reduce((n, r) => n + r.generated, 0);
      expect(ratioTokens).toBe(m[METRIC.trainedTokens]);
      const weighted = (key: 'mean' | 'k3') =>
        ratios.reduce((sum, r) => sum + r[key] * r.generated, 0) / ratioTokens;
      expect(weighted('mean')).toBeCloseTo(m[recordKey(STEP_METRICS.isRatioByLag, 'fresh')]!, 12);
      expect(weighted('k3')).toBeCloseTo(
        m[recordKey(STEP_METRICS.trainInferenceKlByLag, 'fresh')]!,
        12,
      );
      expect(Math.min(...ratios.map((r) => r.min))).toBeCloseTo(m[METRIC.isRatioMin]!, 5);
      expect(Math.max(...ratios.map((r) => r.max))).toBeCloseTo(m[METRIC.isRatioMax]!, 5);
      // the index carries each record's sort keys
      for (const r of records) {
        const entry = index!.rollouts.find((e) => e.id === r.id)!;
        expect(entry.reward).toBe(r.rewards?.reward ?? null);
        expect(entry.ratio).toBe(r.ratio?.mean ?? null);
        expect(entry.length).toBe(r.lengths.generated);
      }
      // turns are the generated text; the calls they made add up to the rollout's count
      for (const r of records) {
        expect(r.turns.length).toBeGreaterThanOrEqual(1);
        expect(r.turns.flatMap((t) => t.calls)).toHaveLength(r.toolCalls);
        expect(r.turns.map((t) => t.assistant).join('').length).toBeGreaterThan(0);
      }
    }
  }, 240_000);

  it('ledger.tokens: token ids and both sides’ logprobs; k3 recomputed from them is the record’s', async () => {
    const artifactDir = path.join(dir, 'runs', RUN(2));
    const ctx = memoryContext(grpoSpec(1, true), resources, { runId: RUN(2), artifactDir });
    await runGrpo(ctx);
    const records = (await readLedgerStep(artifactDir, 1))!;
    expect(records).toHaveLength(24);
    expect((await readLedgerIndex(artifactDir, 1))!.hasTokens).toBe(true);
    for (const r of records) {
      const t = r.tokens!;
      expect(t.ids).toHaveLength(r.lengths.response);
      expect(t.generated).toHaveLength(r.lengths.generated);
      if (r.role === 'reference') {
        // sampled without logprobs (setup.ts): neither side's
        expect(t.samplerLogprobs).toBeUndefined();
        expect(t.trainerLogprobs).toBeUndefined();
        continue;
      }
      const sampler = decodeLogprobs(t.samplerLogprobs!);
      expect(sampler).toHaveLength(r.lengths.generated);
      expect(sampler.every((x) => Number.isFinite(x) && x <= 0)).toBe(true);
      const trainer = decodeLogprobs(t.trainerLogprobs!);
      expect(trainer).toHaveLength(r.lengths.generated);
      const k3 = mean(
        [...trainer].map((lt, k) => {
          const logRatio = lt - sampler[k]!;
          return Math.expm1(logRatio) - logRatio;
        }),
      );
      expect(k3).toBeCloseTo(r.ratio!.k3, 12);
    }
  }, 120_000);

  it('usage recounted from the ledger: the metered usage of every step is what its records say was sent and generated', async () => {
    const artifactDir = path.join(dir, 'runs', RUN(3));
    // every reference group sampled (and billed) by the step that records it
    const spec = grpoSpec(2, true, { reference: { cacheGenerations: false } });
    const ctx = memoryContext(spec, resources, { runId: RUN(3), artifactDir });
    await runGrpo(ctx);
    for (const [step, m] of ctx.steps) {
      const records = (await readLedgerStep(artifactDir, step))!;
      expect(records).toHaveLength(24); // 3 groups × (4 policy + 4 reference), none pruned
      let prompt = 0;
      // one first-turn request per group and role (n = 4): its prompt once
      for (const g of [0, 1, 2]) {
        for (const role of ['policy', 'reference'] as const) {
          const group = records.filter((r) => r.group === g && r.role === role);
          prompt += group[0]!.lengths.prompt;
          // each later turn of a rollout re-sends its whole context (prompt + response so far)
          for (const r of group) {
            const generated = r.tokens!.generated;
            generated.forEach((k, i) => {
              if (i > 0 && generated[i - 1] !== k - 1) prompt += r.lengths.prompt + k;
            });
          }
        }
      }
      const generated = records.reduce((n, r) => n + r.lengths.generated, 0);
      const calls = records.reduce(
        (n, r) =>
          n +
          r.turns.flatMap((t) => t.calls).filter((c) => reachedBackend(c.status as ToolCallStatus))
            .length,
        0,
      );
      const trained = records.reduce((n, r) => n + (r.ratio?.generated ?? 0), 0);
      expect({
        prompt: m[METRIC.usagePromptTokens],
        completion: m[METRIC.usageCompletionTokens],
        trained: m[METRIC.usageTrainedTokens],
        calls: m[METRIC.usageToolCalls],
      }).toEqual({ prompt, completion: generated, trained, calls });
    }
  }, 120_000);
});
