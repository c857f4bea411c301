// The executors driving the real embedded engines (TypeScript trainer, ONNX sampler, ONNX
// reward scorer) with a tiny model and a few steps: SFT -> RM -> GRPO (stop + resume) -> eval.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  ByteTokenizer,
  EmbeddedInferenceEngine,
  EmbeddedTrainer,
  OnnxRewardScorer,
  type RewardScorer,
} from '@anneal/engines';
import { builtinTasks } from '@anneal/envs';
import { validateRunSpec, type RunKind } from '@anneal/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinDataCatalog } from '../resources/data/builtin-catalog.ts';
import type { DataCatalog, PreferenceExample } from '../resources/data/catalog.ts';
import { EXECUTORS } from './index.ts';
import { METRIC, rewardKey } from './metrics.ts';
import { format, memoryContext, specOfKind } from '../../test/executors/fakes.ts';
import type { SpecOf } from './types.ts';
import type { ExecutorResult, RunResources } from './types.ts';

const TINY = { vocabSize: 264, blockSize: 256, nLayer: 1, nHead: 2, nEmbd: 32 };
const RUN = (n: number) => `run_01JTEST00000000000000000${String(n).padStart(2, '0')}`;

function spec<K extends RunKind>(value: Record<string, unknown> & { kind: K }): SpecOf<K> {
  const parsed = validateRunSpec(value);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return specOfKind(value.kind, parsed.value);
}

/** Built-in tasks, but preference pairs a value head separates trivially (short 'yes' wins). */
function separablePairs(catalog: DataCatalog, prompts: readonly string[]): DataCatalog {
  const pair = (prompt: string, i: number): PreferenceExample => ({
    id: `sep-${i}`,
    prompt: format.encodePrompt(prompt),
    chosen: format.tokenizer.encode(format.answerText('yes')),
    rejected: format.tokenizer.encode(format.answerText('no no no no')),
  });
  const pairs = prompts.map(pair);
  const table = { train: pairs.slice(0, 24), heldOut: pairs.slice(24) };
  return {
    ...catalog,
    sources: { ...catalog.sources, preferences: ['separable'] },
    preferences: () => table,
  };
}

const finite = (v: number | null | undefined) => typeof v === 'number' && Number.isFinite(v);

describe('executors on the embedded engines', () => {
  let dir: string;
  let trainer: EmbeddedTrainer;
  let inference: EmbeddedInferenceEngine;
  let scorer: RewardScorer | undefined;
  let resources: RunResources;
  let sft: ExecutorResult;
  let rmResult: ExecutorResult;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-executors-'));
    trainer = new EmbeddedTrainer({ artifactDir: dir, baseModels: { tiny: TINY } });
    inference = new EmbeddedInferenceEngine({ threads: 2 });
    const tasks = builtinTasks(0);
    const catalog = builtinDataCatalog(tasks);
    resources = {
      tokenizer: new ByteTokenizer(),
      trainer,
      inference,
      model: { label: 'tiny', baseModel: 'tiny', checkpoint: null },
      data: separablePairs(
        catalog,
        tasks.qa.train.slice(0, 32).map((q) => q.question),
      ),
    };
  });

  afterAll(async () => {
    await scorer?.close();
    await inference?.close();
    await trainer?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('sft: masked cross-entropy falls, one record per step, checkpoints every N', async () => {
    const ctx = memoryContext(
      spec({
        kind: 'sft',
        steps: 12,
        batchSize: 8,
        checkpointInterval: 5,
        optimizer: { learningRate: 3e-3 },
      }),
      resources,
      { runId: RUN(1) },
    );
    sft = await EXECUTORS.sft(ctx);
    const losses = [...ctx.steps.values()].map((m) => m[METRIC.loss]!);
    console.log('sft loss', losses.map((l) => l.toFixed(3)).join(' '));
    expect(ctx.commitOrder).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(ctx.checkpoints.map((c) => c.step)).toEqual([5, 10, 12]);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b) / xs.length;
    expect(mean(losses.slice(-3))).toBeLessThan(mean(losses.slice(0, 3)) - 0.3);
    for (const m of ctx.steps.values()) expect(finite(m[METRIC.gradNorm])).toBe(true);
    expect(sft.finalCheckpoint).toBe(ctx.checkpoints.at(-1)!.path);
    expect(sft.summary['samplerWeightsPath']).toEqual(expect.any(String));
  });

  it('rm: symmetric Bradley–Terry separates a trivially separable set; the export scores', async () => {
    const ctx = memoryContext(
      spec({
        kind: 'rm',
        steps: 15,
        batchSize: 8,
        checkpointInterval: 15,
        data: { mix: [{ source: 'separable', weight: 1 }] },
        optimizer: { learningRate: 3e-3 },
      }),
      resources,
      { runId: RUN(2) },
    );
    rmResult = await EXECUTORS.rm(ctx);
    const losses = [...ctx.steps.values()].map((m) => m[METRIC.loss]!);
    console.log('rm loss', losses.map((l) => l.toFixed(3)).join(' '), rmResult.summary);
    expect(rmResult.summary['heldOutPairAccuracy']).toBeGreaterThanOrEqual(0.9);
    expect(rmResult.summary['heldOutPairs']).toBe(8);
    expect(rmResult.finalCheckpoint).toBe(rmResult.summary['rewardModelPath']);
    scorer = await OnnxRewardScorer.create({ modelPath: rmResult.finalCheckpoint! });
    const pairs = resources.data!.preferences('separable').heldOut;
    const scores = await scorer.score(
      pairs.flatMap((p) => [
        { prompt: p.prompt, response: p.chosen },
        { prompt: p.prompt, response: p.rejected },
      ]),
    );
    pairs.forEach((_, i) => expect(scores[2 * i]!).toBeGreaterThan(scores[2 * i + 1]!));
  });

  const grpoSpec = (steps: number) =>
    spec({
      kind: 'grpo',
      steps,
      checkpointInterval: 5,
      rollout: { groupSize: 4, promptsPerStep: 2, maxTokens: 40 },
      optimizer: { learningRate: 1e-3 },
    });

  it('grpo: finite KL, grad norm and reward every step; stops at a boundary; resumes without duplicates', async () => {
    const start = { label: 'sft', baseModel: 'tiny', checkpoint: sft.finalCheckpoint };
    const withRm = { ...resources, model: start, ...(scorer ? { rewardScorer: scorer } : {}) };
    const first = memoryContext(grpoSpec(3), withRm, {
      runId: RUN(3),
      onCommit: (step, c) => {
        if (step === 2) c.controller.abort();
      },
    });
    const stopped = await EXECUTORS.grpo(first);
    expect(stopped.stopped).toBe(true);
    expect(first.commitOrder).toEqual([1, 2]);
    expect(first.checkpoints.map((c) => c.step)).toEqual([2]); // the stop checkpoint (interval 5)

    const resumed = memoryContext(grpoSpec(3), withRm, {
      runId: RUN(3),
      resumeFrom: first.checkpoints[0]!,
    });
    const done = await EXECUTORS.grpo(resumed);
    expect(done.stopped).toBe(false);
    expect(resumed.commitOrder).toEqual([3]);
    const records = new Map([...first.steps, ...resumed.steps]);
    expect([...records.keys()].sort()).toEqual([1, 2, 3]);
    for (const [step, m] of records) {
      console.log(
        `grpo step ${step}: reward ${m[rewardKey('all')]?.toFixed(3)} kl(k3) ${m[METRIC.trainInferenceKl]?.toExponential(2)} ` +
          `k1 ${m[METRIC.trainInferenceKlK1]?.toExponential(2)} grad ${m[METRIC.gradNorm]?.toFixed(4)} ` +
          `pref ${m[METRIC.preferenceScore]?.toFixed(3)} tools ${m[METRIC.toolCallsPerRollout]} ` +
          `len ${m[METRIC.responseTokens]} step ${m[METRIC.stepSeconds]?.toFixed(2)}s`,
      );
      for (const key of [
        METRIC.trainInferenceKl,
        METRIC.trainInferenceKlK1,
        METRIC.gradNorm,
        rewardKey('all'),
      ]) {
        expect(finite(m[key]), `${key} at step ${step}`).toBe(true);
      }
      expect(m[METRIC.trainInferenceKl]).toBeLessThan(1e-2);
      expect(m[METRIC.preferenceScore]).toBeGreaterThan(0);
      expect(m[METRIC.preferenceScore]).toBeLessThan(1);
      // Usage (docs/usage.md): the policy rollouts at least, plus references sampled this step.
      expect(m[METRIC.usageCompletionTokens]).toBeGreaterThanOrEqual(m[METRIC.rolloutTokens]!);
      expect(m[METRIC.usagePromptTokens]).toBeGreaterThan(0);
      expect(m[METRIC.usageTrainedTokens]).toBe(m[METRIC.trainedTokens]);
    }
    expect(done.finalCheckpoint).toBe(resumed.checkpoints.at(-1)!.path);
  });

  it('eval: a budget sweep per checkpoint (accuracy, interval, tool calls, cost) with item records', async () => {
    const ctx = memoryContext(
      spec({
        kind: 'eval',
        datasets: ['search-qa', 'search-qa-tool-free'],
        examples: 3,
        budgets: { toolCallBudgets: [1, 0], maxToolCalls: 1, maxOutputTokens: 32 },
        prices: { promptPerMillionTokens: 1, completionPerMillionTokens: 2, perToolCall: 0.01 },
      }),
      {
        ...resources,
        rewardScorer: scorer!, // the rm run's export: preference side-by-side vs checkpoint 0
        evalModels: [
          { label: 'base', baseModel: 'tiny', checkpoint: null },
          {
            label: 'sft',
            baseModel: 'tiny',
            checkpoint: sft.finalCheckpoint,
            samplerPath: sft.summary['samplerWeightsPath'] as string,
          },
        ],
      },
      { runId: RUN(4) },
    );
    ctx.artifactDir = path.join(dir, 'eval-run');
    const result = await EXECUTORS.eval(ctx);
    console.log('eval', result.summary);
    // checkpoint-major, budgets ascending: (base,0) (base,1) (sft,0) (sft,1)
    expect(ctx.commitOrder).toEqual([1, 2, 3, 4]);
    expect([...ctx.steps.values()].map((m) => [m['eval/checkpoint'], m['eval/budget']])).toEqual([
      [0, 0],
      [0, 1],
      [1, 0],
      [1, 1],
    ]);
    for (const [step, m] of ctx.steps) {
      expect(m[METRIC.examples], `step ${step}`).toBe(6);
      expect(m['accuracy/ci_low']).toBeLessThanOrEqual(m[METRIC.accuracy]!);
      expect(m['accuracy/ci_high']).toBeGreaterThanOrEqual(m[METRIC.accuracy]!);
      expect(m[METRIC.toolCallsExecuted]).toBeLessThanOrEqual(m['eval/budget']!); // the cap b
      expect(m['cost_per_query_usd']).toBeGreaterThan(0);
      expect(m['prompt_tokens_per_query']).toBeGreaterThan(0);
      // The cell's usage is what its queries are billed for, in total.
      expect(m[METRIC.usagePromptTokens]).toBeCloseTo(6 * m['prompt_tokens_per_query']!, 6);
      expect(m[METRIC.usageToolCalls]).toBeCloseTo(6 * m[METRIC.toolCallsExecuted]!, 6);
      const win = m['preference_win_rate'];
      if (m['eval/checkpoint'] === 0) expect(win).toBeNull();
      else expect(win).toSatisfy((v: number) => v >= 0 && v <= 1);
    }
    for (const label of ['base', 'sft']) {
      expect(result.summary[`${label}/${METRIC.examples}`]).toBe(6);
      expect(result.summary[`${label}/eval/budget`]).toBe(1); // headline at maxToolCalls
      expect(result.summary[`${label}/knee`]).toEqual(expect.any(Number));
    }
    const items = (await readFile(path.join(ctx.artifactDir, 'eval-items.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { step: number; correct: boolean });
    expect(items).toHaveLength(24);
    const correctAtStep1 = items.filter((x) => x.step === 1 && x.correct).length;
    expect(correctAtStep1 / 6).toBe(ctx.steps.get(1)![METRIC.accuracy]);
    // A retried attempt (fresh start, same run) lists every answer once, not twice.
    const retry = memoryContext(ctx.spec, ctx.resources, { runId: RUN(4) });
    retry.artifactDir = ctx.artifactDir;
    await EXECUTORS.eval(retry);
    const again = await readFile(path.join(ctx.artifactDir, 'eval-items.jsonl'), 'utf8');
    expect(again.trim().split('\n')).toHaveLength(24);
    // statePrompt: false leaves the prompts without the budget statement (shorter contexts).
    const plain = memoryContext(
      spec({
        kind: 'eval',
        datasets: ['search-qa'],
        examples: 3,
        models: [{}],
        budgets: { toolCallBudgets: [0], statePrompt: false, maxOutputTokens: 8 },
      }),
      { ...resources, evalModels: [{ label: 'base', baseModel: 'tiny', checkpoint: null }] },
      { runId: RUN(5) },
    );
    plain.artifactDir = path.join(dir, 'eval-plain');
    await EXECUTORS.eval(plain);
    const example = resources.data!.evalSet('search-qa')[0]!;
    const first = JSON.parse(
      (await readFile(path.join(plain.artifactDir, 'eval-items.jsonl'), 'utf8')).split('\n')[0]!,
    ) as { id: string; promptTokens: number; toolCalls: number };
    expect(first.id).toBe(example.id);
    // one request (8 tokens leave no room for a second turn): billed = the bare prompt
    expect(first.promptTokens).toBe(format.encodePrompt(example.question).length);
  });
});
