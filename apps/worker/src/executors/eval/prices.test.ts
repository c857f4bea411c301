// Per-model prices reach the cells (docs/evaluation.md "Prices per model"): the eval executor
// costs each checkpoint's cells at pricesFor(spec, checkpoint), its own prices field by field
// over the spec table. Prices of $1 per token make the expected cost the cell's own token means.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ByteTokenizer, type SampleRequest } from '@anneal/engines';
import { validateRunSpec, type EvalSpec } from '@anneal/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultDataCatalog } from '../../resources/data/builtin-catalog.ts';
import { runEval } from './index.ts';
import {
  ScriptedInference,
  format,
  memoryContext,
  specOfKind,
} from '../../../test/executors/fakes.ts';
import type { RunResources } from '../types.ts';

const PER_TOKEN = 1_000_000; // USD per million tokens: $1 a token

function spec(): EvalSpec {
  const parsed = validateRunSpec({
    kind: 'eval',
    models: [
      {}, // the spec table: prompt tokens only
      { prices: { completionPerMillionTokens: PER_TOKEN } }, // + its completion tokens
      { prices: { promptPerMillionTokens: 0 } }, // prompt free, nothing else priced: no cost
    ],
    examples: 3,
    budgets: { toolCallBudgets: [0, 1], maxOutputTokens: 32 },
    prices: { promptPerMillionTokens: PER_TOKEN },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return specOfKind('eval', parsed.value);
}

const questions = defaultDataCatalog()
  .evalSet('search-qa')
  .slice(0, 3)
  .map((e) => ({ question: e.question, answer: e.key.answer }));

function resources(): RunResources {
  const target = (n: number) => ({
    label: `ckpt${n}`,
    baseModel: 'tiny',
    checkpoint: null,
    samplerPath: `mem://ckpt${n}`,
  });
  const inference = new ScriptedInference((request: SampleRequest) => {
    const prompt = format.tokenizer.decode(request.prompt);
    return questions.find((q) => prompt.includes(q.question))?.answer ?? '?';
  });
  return {
    tokenizer: new ByteTokenizer(),
    inference,
    trainer: undefined as never, // sampler exports: no trainer is asked
    model: target(0),
    evalModels: [target(0), target(1), target(2)],
    data: defaultDataCatalog(),
  };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-eval-prices-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('eval cells with per-model prices', () => {
  it('cost each checkpoint at its own prices over the spec table', async () => {
    const ctx = memoryContext(spec(), resources(), { runId: 'run_01JTESTEVALPRICES000000000' });
    ctx.artifactDir = dir;
    await runEval(ctx);
    expect(ctx.steps.size).toBe(6);
    for (const m of ctx.steps.values()) {
      const prompt = m['prompt_tokens_per_query']!;
      const completion = m['response_tokens']!;
      expect(prompt).toBeGreaterThan(0);
      expect(completion).toBeGreaterThan(0);
      expect(m['tool_calls_per_rollout']).toBe(0); // answers only: no tool-call price at stake
      const expected = [prompt, prompt + completion, null][m['eval/checkpoint']!];
      if (expected === null) expect(m['cost_per_query_usd'], 'checkpoint 2').toBeNull();
      else expect(m['cost_per_query_usd']).toBeCloseTo(expected!, 9);
    }
  });
});
