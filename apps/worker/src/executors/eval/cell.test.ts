import type { Rollout, ToolCallRecord } from '@anneal/envs';
import { EVAL_CELL_KEYS } from '@anneal/envs';
import { describe, expect, it } from 'vitest';
import type { EvalExample } from '../../resources/data/catalog.ts';
import { cellMetrics } from './cell.ts';
import { verifierGrade } from './grade.ts';
import { withBudgetStatement, budgetStatement } from './index.ts';
import { METRIC } from '../metrics.ts';
import { format } from '../../../test/executors/fakes.ts';

const call = (status: ToolCallRecord['status']): ToolCallRecord => ({
  query: 'q',
  status,
  failed: status !== 'ok',
  resultCount: 0,
  output: '',
});

/** prompt 4 tokens, then generated / tool-output runs as given by the mask tail. */
function rollout(answer: string | null, calls: ToolCallRecord[], maskTail: number[]): Rollout {
  const lossMask = [0, 0, 0, 0, ...maskTail];
  return {
    tokens: new Int32Array(lossMask.length).fill(1),
    promptLength: 4,
    lossMask: Uint8Array.from(lossMask),
    logprobs: new Float32Array(lossMask.length),
    generatedTokens: maskTail.filter((m) => m === 1).length,
    toolCalls: calls.length,
    toolErrors: calls.filter((c) => c.failed).length,
    refusedCalls: calls.filter((c) => c.status === 'refused').length,
    calls,
    answer,
    finish: answer === null ? 'no_answer' : 'answer',
    truncated: false,
  };
}

const ex = (id: string, answer: string, extra: Partial<EvalExample> = {}): EvalExample => ({
  id,
  question: id,
  key: { answer },
  needsSearch: true,
  ...extra,
});

describe('cellMetrics', () => {
  const examples = [
    ex('a', 'Paris'),
    ex('b', 'Rome', { language: 'en' }),
    ex('c', 'x', { unanswerable: true }),
    ex('d', 'Oslo', { needsSearch: false }),
  ];
  const rollouts = [
    // correct, 2 calls (1 refused past the cap): requests at context 4 and 4+2+1=7
    rollout('paris', [call('ok'), call('refused')], [1, 1, 0, 1]),
    // wrong, 1 malformed call, and in German for an English question
    rollout('Die Stadt ist nicht in der Nähe und das ist es', [call('malformed')], [1, 1]),
    // unanswerable, abstained: correct
    rollout("I don't know", [], [1, 1, 1]),
    // answerable but abstained (no answer): a false abstention
    rollout(null, [call('backend_error')], [1]),
  ];
  const prices = {
    promptPerMillionTokens: 1_000_000,
    completionPerMillionTokens: 0,
    perToolCall: 0.5,
  };
  const grades = examples.map((e, i) => verifierGrade(e, rollouts[i]!.answer));
  const { metrics, items } = cellMetrics(
    examples,
    rollouts,
    { step: 3, checkpoint: 1, budget: 1, attempt: 2 },
    prices,
    grades,
  );

  it('scores items (abstaining is right on unanswerable questions) and keeps them', () => {
    expect(items.map((i) => i.correct)).toEqual([true, false, true, false]);
    expect(items.map((i) => i.brokenCalls)).toEqual([1, 1, 0, 0]); // backend errors are not broken
    expect(items.map((i) => i.promptTokens)).toEqual([11, 4, 4, 4]);
    expect(items.map((i) => i.searchCalls)).toEqual([1, 0, 0, 1]); // what a query is billed for
    expect(items[0]).toMatchObject({ step: 3, checkpoint: 1, budget: 1, id: 'a', answer: 'paris' });
    expect(items.map((i) => [i.grader, i.attempt])).toEqual(items.map(() => ['verifier', 2]));
  });

  it('holds the hand-computed cell numbers', () => {
    expect(metrics['eval/checkpoint']).toBe(1);
    expect(metrics['eval/budget']).toBe(1);
    expect(metrics['examples']).toBe(4);
    expect(metrics['accuracy']).toBe(0.5);
    // Wilson 2/4: centre (0.5 + 0.48021)/1.96041 = 0.5, half 0.99977·sqrt(0.0625 + 0.06002) = 0.34990
    expect(metrics['accuracy/ci_low']).toBeCloseTo(0.1501, 3);
    expect(metrics['accuracy/ci_high']).toBeCloseTo(0.8499, 3);
    expect(metrics['tool_calls_per_rollout']).toBe(1); // 4 calls / 4 questions
    expect(metrics['broken_tool_call_rate']).toBe(0.5); // 2 of 4 calls
    expect(metrics['abstention/unanswerable']).toBe(1);
    expect(metrics['abstention/false']).toBeCloseTo(1 / 3, 12);
    expect(metrics['language_mismatch']).toBe(0.25); // b only; short answers are undetermined
    expect(metrics['prompt_tokens_per_query']).toBe(23 / 4);
    expect(metrics['response_tokens']).toBe(2.25); // (3 + 2 + 3 + 1) / 4
    // Only the ok and the backend-error call reached the search backend: 2 of the 4 calls
    // emitted. The refused (past the cap) and the malformed one are reported apart and not billed.
    expect(metrics['tool_calls_per_rollout/executed']).toBe(0.5); // 2 calls / 4 questions
    expect(metrics['tool_calls_per_rollout/refused']).toBe(0.5); // refused + malformed
    // 5.75 prompt tokens at $1 each + 0.5 billed calls at $0.5
    expect(metrics['cost_per_query_usd']).toBeCloseTo(6, 12);
    expect(metrics['accuracy/tool_free']).toBe(0);
  });

  it('bills no tool call the tool refused before the backend: past the cap, empty, over-long', () => {
    const refusedOnly = rollout(
      'paris',
      [call('refused'), call('empty_query'), call('query_too_long'), call('malformed')],
      [1, 1],
    );
    const toolPrice = { promptPerMillionTokens: 0, completionPerMillionTokens: 0, perToolCall: 1 };
    const cell = cellMetrics(
      [ex('a', 'Paris')],
      [refusedOnly],
      { step: 1, checkpoint: 0, budget: 0, attempt: 1 },
      toolPrice,
      [verifierGrade(ex('a', 'Paris'), 'paris')],
    );
    expect(cell.metrics['tool_calls_per_rollout']).toBe(4); // emitted, as before
    expect(cell.metrics['tool_calls_per_rollout/executed']).toBe(0);
    expect(cell.metrics['tool_calls_per_rollout/refused']).toBe(4);
    expect(cell.metrics['cost_per_query_usd']).toBe(0); // priced, and nothing to pay
    expect(cell.items[0]).toMatchObject({ toolCalls: 4, searchCalls: 0 });
  });

  it('reports no cost without prices and no abstention without marked questions', () => {
    const free = { promptPerMillionTokens: 0, completionPerMillionTokens: 0, perToolCall: 0 };
    const plain = cellMetrics(
      examples.slice(0, 2),
      rollouts.slice(0, 2),
      { step: 1, checkpoint: 0, budget: 0, attempt: 1 },
      free,
      grades.slice(0, 2),
    );
    expect(plain.metrics['cost_per_query_usd']).toBeNull();
    expect(plain.metrics['abstention/unanswerable']).toBeNull();
    expect(plain.metrics['abstention/false']).toBeNull();
  });
});

describe('budget statement', () => {
  it('starts every prompt with the hard cap b', () => {
    const capped = withBudgetStatement(format, 3);
    const text = format.tokenizer.decode(capped.encodePrompt('Where?'));
    expect(text).toContain(`${budgetStatement(3)}\nWhere?`);
    expect(budgetStatement(3)).toContain('at most 3 search_web calls');
    expect(capped.stopTokenIds).toEqual(format.stopTokenIds);
  });
});

describe('eval cell keys', () => {
  it('are rows of the step-metric table (docs/metrics.md documents them)', () => {
    const known = new Set<string>(Object.values(METRIC));
    for (const key of Object.values(EVAL_CELL_KEYS)) expect(known, key).toContain(key);
  });
});
