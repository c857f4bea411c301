// The eval executor with a scripted sampler: a retried eval resumes after the committed cells
// (item lines of the partial cell dropped, checkpoint 0's reward scores read back from its
// lines), and `judge: llm` grades with the run's judge.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ByteTokenizer, type RewardScorer, type SampleRequest } from '@anneal/engines';
import type { RubricJudge } from '@anneal/envs';
import { STEP_USAGE_KEYS, validateRunSpec, type EvalSpec } from '@anneal/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunSetupError } from '../../errors.ts';
import { defaultDataCatalog } from '../../resources/data/builtin-catalog.ts';
import type { EvalItem } from './cell.ts';
import { ITEMS_FILE, runEval } from './index.ts';
import {
  ScriptedInference,
  format,
  memoryContext,
  specOfKind,
} from '../../../test/executors/fakes.ts';
import type { RunResources } from '../types.ts';

const RUN = 'run_01JTESTEVALRESUME000000000';
const EXAMPLES = 4;

function spec(extra: Record<string, unknown> = {}): EvalSpec {
  const parsed = validateRunSpec({
    kind: 'eval',
    models: [{}, {}],
    datasets: ['search-qa'],
    examples: EXAMPLES,
    budgets: { toolCallBudgets: [2, 0], maxToolCalls: 2, maxOutputTokens: 64 },
    ...extra,
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return specOfKind('eval', parsed.value);
}

const questions = defaultDataCatalog()
  .evalSet('search-qa')
  .slice(0, EXAMPLES)
  .map((e) => ({ question: e.question, answer: e.key.answer }));

/** Checkpoint 0 answers the first half right; checkpoint 1 everything, at more length. */
function sampler(): ScriptedInference {
  return new ScriptedInference((request: SampleRequest) => {
    const prompt = format.tokenizer.decode(request.prompt);
    const k = questions.findIndex((q) => prompt.includes(q.question));
    const answer = questions[k]?.answer ?? '?';
    if (request.model === `${RUN}-eval-1`) return `${answer} indeed, for sure and for certain`;
    return k < EXAMPLES / 2 ? answer : 'no idea at all';
  });
}

/** s(x, y) = length of y: the longer answers of checkpoint 1 win. */
const scorer: RewardScorer = {
  score: (pairs) => Promise.resolve(Float32Array.from(pairs.map((p) => p.response.length))),
  close: () => Promise.resolve(),
};

function resources(inference: ScriptedInference, extra: Partial<RunResources> = {}): RunResources {
  const target = (n: number) => ({
    label: `ckpt${n}`,
    baseModel: 'tiny',
    checkpoint: null,
    samplerPath: `mem://ckpt${n}`,
  });
  return {
    tokenizer: new ByteTokenizer(),
    inference,
    trainer: undefined as never, // every target has a sampler export: no trainer is asked
    model: target(0),
    evalModels: [target(0), target(1)],
    rewardScorer: scorer,
    data: defaultDataCatalog(),
    ...extra,
  };
}

const readItems = async (dir: string): Promise<EvalItem[]> =>
  (await readFile(path.join(dir, ITEMS_FILE), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as EvalItem);

const withoutPhases = (m: Record<string, number | null>) =>
  Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('phase_seconds/')));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-eval-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('a retried eval', () => {
  it('resumes after its committed cells: none answered twice, the numbers as uninterrupted', async () => {
    // Uninterrupted: 2 checkpoints × budgets (0, 2) = steps 1..4.
    const whole = memoryContext(spec(), resources(sampler()), { runId: RUN });
    whole.artifactDir = path.join(dir, 'whole');
    const done = await runEval(whole);
    const all = await readItems(whole.artifactDir);
    expect(all).toHaveLength(4 * EXAMPLES);
    expect(whole.steps.get(4)!['preference_win_rate']).toBeCloseTo(1, 6); // longer ones win

    // Killed in step 3: steps 1-2 committed, step 3's lines written (and one cut short).
    const killed = path.join(dir, 'killed');
    const partial = all.filter((x) => x.step <= 3).map((x) => JSON.stringify(x) + '\n');
    await mkdir(killed, { recursive: true });
    await writeFile(path.join(killed, ITEMS_FILE), partial.join('') + '{"step":3,"checkp');
    const inference = sampler();
    const retry = memoryContext(spec(), resources(inference), {
      runId: RUN,
      attempt: 2,
      committed: new Map([1, 2].map((s) => [s, whole.steps.get(s)!])),
    });
    retry.artifactDir = killed;
    const resumed = await runEval(retry);

    // Only checkpoint 1's cells ran: its weights alone were loaded, its requests alone sent.
    expect(retry.commitOrder).toEqual([3, 4]);
    expect(inference.loaded.map((w) => w.path)).toEqual(['mem://ckpt1']);
    expect(new Set(inference.requests.map((r) => r.model))).toEqual(new Set([`${RUN}-eval-1`]));
    const items = await readItems(killed);
    const cells = items.map((x) => `${x.checkpoint}/${x.budget}/${x.id}`);
    expect(new Set(cells).size).toBe(cells.length);
    expect(cells.sort()).toEqual(all.map((x) => `${x.checkpoint}/${x.budget}/${x.id}`).sort());
    expect(items.map((x) => [x.step, x.attempt])).toEqual(
      items.map((x) => [x.step, x.step <= 2 ? 1 : 2]),
    );
    // Checkpoint 0's scores came back from its item lines: the win rates are not null.
    for (const step of [3, 4]) {
      expect(withoutPhases(retry.steps.get(step)!)).toEqual(withoutPhases(whole.steps.get(step)!));
    }
    expect(retry.steps.get(4)!['preference_win_rate']).toBeCloseTo(1, 6);
    // The summary (knee, headline numbers) is rebuilt from the committed steps too.
    expect({ ...resumed.summary, itemsPath: null }).toEqual({ ...done.summary, itemsPath: null });
  });

  it('a fresh attempt starts the item file over', async () => {
    const ctx = memoryContext(spec(), resources(sampler()), { runId: RUN });
    ctx.artifactDir = path.join(dir, 'fresh');
    await runEval(ctx);
    const again = memoryContext(ctx.spec, ctx.resources, { runId: RUN });
    again.artifactDir = ctx.artifactDir;
    await runEval(again);
    expect(await readItems(ctx.artifactDir)).toHaveLength(4 * EXAMPLES);
  });
});

describe('judge: llm', () => {
  it("grades with the run's judge and records the grader per item", async () => {
    const asked: Array<{ prompt: string; response: string; rubric: string }> = [];
    // A judge that accepts any answer containing "indeed" (the verifier accepts none of them).
    const judge: RubricJudge = {
      name: 'fake-judge',
      judge: (prompt, response, rubrics) => {
        asked.push({ prompt, response, rubric: rubrics[0]!.text });
        return Promise.resolve([response.includes('indeed')]);
      },
    };
    // The reward model's side: the tokens of every pair it scored.
    let scored = 0;
    const counting: RewardScorer = {
      score: (pairs) => {
        for (const p of pairs) scored += p.prompt.length + p.response.length;
        return scorer.score(pairs);
      },
      close: () => Promise.resolve(),
    };
    const ctx = memoryContext(
      spec({ judge: 'llm' }),
      resources(sampler(), { judge, rewardScorer: counting }),
      { runId: RUN },
    );
    ctx.artifactDir = path.join(dir, 'judged');
    await runEval(ctx);
    const items = await readItems(ctx.artifactDir);
    expect(new Set(items.map((x) => x.grader))).toEqual(new Set(['llm']));
    expect(items.filter((x) => x.checkpoint === 1).every((x) => x.correct)).toBe(true);
    expect(items.filter((x) => x.checkpoint === 0).some((x) => x.correct)).toBe(false);
    expect(ctx.steps.get(3)!['accuracy']).toBe(1);
    expect(ctx.steps.get(1)!['accuracy']).toBe(0);
    expect(asked).toHaveLength(4 * EXAMPLES);
    // metered with each cell's step (docs/usage.md): what the judge and the scorer received
    const metered = (key: string) =>
      [...ctx.steps.values()].reduce((sum, m) => sum + (m[key] ?? 0), 0);
    expect(metered(STEP_USAGE_KEYS.judgeCalls)).toBe(asked.length);
    expect(scored).toBeGreaterThan(0);
    expect(metered(STEP_USAGE_KEYS.scoredTokens)).toBe(scored);
    expect(asked[0]!.prompt).toBe(questions[0]!.question);
    expect(asked[0]!.rubric).toContain(`"${questions[0]!.answer}"`);
  });

  it('without a registered judge the run is refused at setup, naming the field', async () => {
    const ctx = memoryContext(spec({ judge: 'llm' }), resources(sampler()), { runId: RUN });
    ctx.artifactDir = path.join(dir, 'no-judge');
    await expect(runEval(ctx)).rejects.toThrow(RunSetupError);
    await expect(runEval(ctx)).rejects.toThrow(/^judge: llm needs a judge endpoint/);
  });
});
