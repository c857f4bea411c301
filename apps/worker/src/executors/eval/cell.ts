// The numbers of one eval cell, a checkpoint at one tool-call budget b (docs/recipe.md §8):
// accuracy with its 95% Wilson interval, tool calls, broken tool calls, abstention, tokens and
// dollars per query, plus the per-item records that let any of them be traced to answers.
// Keys: @anneal/envs EVAL_CELL_KEYS (read back by GET /v1/runs/{id}/results).
import {
  EVAL_CELL_KEYS as K,
  billedPromptTokens,
  hasPrices,
  isAbstention,
  languageMismatch,
  queryCost,
  reachedBackend,
  wilsonInterval,
  type Prices,
  type Rollout,
} from '@anneal/envs';
import type { EvalItem } from '@anneal/protocol';
import type { EvalExample } from '../../resources/data/catalog.ts';
import type { Grade } from './grade.ts';
import { METRIC } from '../metrics.ts';

/** Tool-call outcomes the model is to blame for: a malformed call, an empty or over-long query,
 * a call past the cap b. Backend errors are not broken calls. */
const BROKEN = new Set(['malformed', 'empty_query', 'query_too_long', 'refused']);

/** Longest answer text kept in an item record. */
export const ITEM_ANSWER_CHARS = 200;

/** A line of eval-items.jsonl; the type the control plane serves (GET /v1/runs/{id}/items). */
export type { EvalItem };

/** Where an item was answered: its cell and the attempt. */
export interface ItemAt {
  step: number;
  checkpoint: number;
  budget: number;
  attempt: number;
}

const mean = (values: readonly number[]): number | null =>
  values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

/** One item, graded by `grade` (eval-grade.ts). */
export function scoreItem(e: EvalExample, r: Rollout, at: ItemAt, grade: Grade): EvalItem {
  const { attempt, ...cell } = at;
  return {
    ...cell,
    id: e.id,
    needsSearch: e.needsSearch,
    correct: grade.correct,
    grader: grade.grader,
    answer: r.answer === null ? null : r.answer.slice(0, ITEM_ANSWER_CHARS),
    abstained: isAbstention(r.answer),
    languageMismatch: languageMismatch(e.question, r.answer, e.language),
    toolCalls: r.toolCalls,
    searchCalls: r.calls.filter((c) => reachedBackend(c.status)).length,
    brokenCalls: r.calls.filter((c) => BROKEN.has(c.status)).length,
    finish: r.finish,
    promptTokens: billedPromptTokens(r.lossMask, r.promptLength),
    completionTokens: r.generatedTokens,
    attempt,
  };
}

/** The cell's step record (examples[i] was answered by rollouts[i] and graded grades[i]). */
export function cellMetrics(
  examples: readonly EvalExample[],
  rollouts: readonly Rollout[],
  at: ItemAt,
  prices: Prices,
  grades: readonly Grade[],
): { metrics: Record<string, number | null>; items: EvalItem[] } {
  if (examples.length !== rollouts.length || examples.length !== grades.length) {
    throw new Error(
      `eval cell: ${rollouts.length} answers and ${grades.length} grades for ${examples.length} questions`,
    );
  }
  const items = examples.map((e, i) => scoreItem(e, rollouts[i]!, at, grades[i]!));
  const rows = examples.map((e, i) => ({ e, r: rollouts[i]!, item: items[i]! }));
  const correct = sum(items.map((x) => (x.correct ? 1 : 0)));
  const interval = wilsonInterval(correct, items.length);
  const calls = sum(items.map((x) => x.toolCalls));
  const marked = examples.some((e) => e.unanswerable !== undefined);
  const unanswerable = rows.filter((x) => x.e.unanswerable === true);
  const answerable = rows.filter((x) => x.e.unanswerable !== true);
  const search = rows.filter((x) => x.e.needsSearch);
  const toolFree = rows.filter((x) => !x.e.needsSearch);
  const promptTokens = mean(items.map((x) => x.promptTokens));
  const completionTokens = mean(items.map((x) => x.completionTokens));
  const toolCalls = mean(items.map((x) => x.toolCalls));
  // billed: the calls that reached the search backend, never the ones the tool refused itself
  const searchCalls = mean(items.map((x) => x.searchCalls));
  const refusedCalls = mean(items.map((x) => x.toolCalls - x.searchCalls));
  const cost =
    hasPrices(prices) && promptTokens !== null && completionTokens !== null && searchCalls !== null
      ? queryCost({ promptTokens, completionTokens, toolCalls: searchCalls }, prices)
      : null;
  const rate = (xs: typeof rows, pick: (x: (typeof rows)[number]) => boolean) =>
    mean(xs.map((x) => (pick(x) ? 1 : 0)));
  const metrics: Record<string, number | null> = {
    [K.checkpoint]: at.checkpoint,
    [K.budget]: at.budget,
    [K.examples]: items.length,
    [K.correct]: correct,
    [K.accuracy]: items.length === 0 ? null : correct / items.length,
    [K.accuracyLow]: interval?.low ?? null,
    [K.accuracyHigh]: interval?.high ?? null,
    [K.toolCalls]: toolCalls,
    [K.brokenToolCallRate]: calls === 0 ? null : sum(items.map((x) => x.brokenCalls)) / calls,
    [K.abstention]: unanswerable.length === 0 ? null : rate(unanswerable, (x) => x.item.abstained),
    [K.falseAbstention]: marked ? rate(answerable, (x) => x.item.abstained) : null,
    [K.languageMismatch]: rate(rows, (x) => x.item.languageMismatch),
    [K.promptTokens]: promptTokens,
    [K.completionTokens]: completionTokens,
    [K.costPerQuery]: cost,
    [METRIC.accuracyNeedsSearch]: rate(search, (x) => x.item.correct),
    [METRIC.accuracyToolFree]: rate(toolFree, (x) => x.item.correct),
    [METRIC.toolCallsNeedsSearch]: mean(search.map((x) => x.r.toolCalls)),
    [METRIC.toolCallsToolFree]: mean(toolFree.map((x) => x.r.toolCalls)),
    [METRIC.toolCallsExecuted]: searchCalls,
    [METRIC.toolCallsRefused]: refusedCalls,
    [METRIC.answeredFraction]: rate(rows, (x) => x.r.answer !== null),
  };
  return { metrics, items };
}
