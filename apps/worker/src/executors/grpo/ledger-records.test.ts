// The rollout ledger's records (ledger-records.ts, docs/api.md "`GET /v1/runs/{id}/rollouts` (viewer)"): every turn's tool
// calls, the last turn's included, and what the judge said on each judged rubric.
import type { RubricJudge } from '@anneal/envs';
import type { ToolCallRecord } from '@anneal/envs';
import { describe, expect, it, vi } from 'vitest';
import { format, rollout } from '../../../test/executors/fakes.ts';
import { ledgerRecords } from './ledger-records.ts';
import type { PreparedBatch } from './prepared-batch.ts';
import { gradeRollout } from './rewards.ts';
import type { StepPrompt } from './sample-prompts.ts';

const tok = format.tokenizer;
const call = (query: string) => [format.ids.callStart, ...tok.encode(query), format.ids.callEnd];
const record = (query: string): ToolCallRecord => ({
  query,
  status: 'ok',
  failed: false,
  resultCount: 1,
  output: `result of ${query}`,
});

const rubricPrompt: StepPrompt = {
  source: 'rubric-chat',
  example: {
    kind: 'rubric',
    id: 'r1',
    prompt: 'Say hello politely',
    rubrics: [
      { text: 'contains hello', check: { type: 'contains_all', terms: ['hello'] } },
      { text: 'is polite' },
      { text: 'is concise' },
    ],
  },
  tokens: format.encodePrompt('Say hello politely'),
};

/** A one-group batch of `rollouts` on `prompt` (rewards and advantages 0). */
function batchOf(
  prompt: StepPrompt,
  rollouts: PreparedBatch['groups'][number],
  judged: PreparedBatch['judged'][number],
): PreparedBatch {
  const zeros = () => new Float64Array(rollouts.length);
  return {
    step: 1,
    prompts: [prompt],
    groups: [rollouts],
    references: [{ rollouts: [], sampledAt: 1 }],
    baseReward: [rollouts.map(() => 0)],
    judged: [judged],
    preferenceScore: [rollouts.map(() => 1)],
    scoring: { judgeCalls: 0, scoredTokens: 0 },
    scores: [
      {
        toolBaseline: null,
        toolPenalty: zeros(),
        lengthPenalty: zeros(),
        efficiencyPenalty: zeros(),
        reward: zeros(),
        advantage: zeros(),
        zeroVariance: true,
      },
    ],
    version: 0,
    rolloutSeconds: 0,
    rewardSeconds: 0,
  };
}

const recordsOf = (batch: PreparedBatch) =>
  ledgerRecords({
    step: 1,
    batch,
    format,
    ratios: batch.groups[0]!.map(() => null),
    trainerLogprobs: null,
    hasTokens: false,
    resultChars: 100,
  })[0]!;

describe('rollout ledger records', () => {
  it("keeps the last turn's tool calls: a rollout whose budget ran out after its calls ran", () => {
    // turn 1 calls "a", its result; turn 2 calls "b", whose result did not fit
    const ended = rollout(
      rubricPrompt.tokens,
      [
        { tokens: call('a'), generated: true },
        { tokens: format.encodeResult('result of a'), generated: false },
        { tokens: call('b'), generated: true },
      ],
      {
        toolCalls: 2,
        calls: [record('a'), record('b')],
        finish: 'length',
        truncated: true,
      },
    );
    const [policy] = recordsOf(batchOf(rubricPrompt, [ended], [null]));
    expect(policy!.turns.map((t) => t.calls.map((c) => c.arguments.query))).toEqual([['a'], ['b']]);
    expect(policy!.turns.flatMap((t) => t.calls)).toHaveLength(policy!.toolCalls);
  });

  it("takes each turn's text and calls from what the rollout loop decoded, decoding nothing", () => {
    const segments = [
      { tokens: call('a'), generated: true },
      { tokens: format.encodeResult('result of a'), generated: false },
      { tokens: [...tok.encode('<|answer|>hello'), format.ids.eos], generated: true },
    ];
    const extra = { toolCalls: 1, calls: [record('a')], answer: 'hello' };
    const decoded = recordsOf(
      batchOf(rubricPrompt, [rollout(rubricPrompt.tokens, segments, extra)], [null]),
    );
    const sampledTurns = [segments[0]!, segments[2]!].map((s) => ({
      text: tok.decode(s.tokens),
      toolCalls: s === segments[0] ? 1 : 0,
    }));
    const kept = rollout(rubricPrompt.tokens, segments, { ...extra, sampledTurns });
    const decode = vi.spyOn(tok, 'decode');
    try {
      const records = recordsOf(batchOf(rubricPrompt, [kept], [null]));
      expect(decode).not.toHaveBeenCalled();
      expect(records).toEqual(decoded);
      expect(records[0]!.turns.map((t) => [t.assistant, t.calls.length])).toEqual(
        sampledTurns.map((t) => [t.text, t.toolCalls]),
      );
    } finally {
      decode.mockRestore();
    }
    // turns that do not match the loss mask's runs (not the loop's) are decoded instead
    const stale = rollout(rubricPrompt.tokens, segments, {
      ...extra,
      sampledTurns: [sampledTurns[0]!],
    });
    expect(recordsOf(batchOf(rubricPrompt, [stale], [null]))).toEqual(decoded);
  });

  it('shows what the judge said on a rollout with r_base 0, and null where it was not asked', async () => {
    const asked: string[] = [];
    // polite yes, concise no: r_base 0
    const judge: RubricJudge = {
      name: 'fake',
      judge: (_prompt, response, rubrics) => {
        asked.push(response);
        return Promise.resolve(rubrics.map((r) => r.text === 'is polite'));
      },
    };
    const answer = (text: string | null) =>
      rollout(rubricPrompt.tokens, [{ tokens: tok.encode(text ?? 'x'), generated: true }], {
        answer: text,
      });
    const rollouts = [answer('hello, kind sir'), answer('goodbye'), answer(null)];
    const grades = await Promise.all(rollouts.map((r) => gradeRollout(rubricPrompt, r, judge)));
    // the judge is asked only when the program's rubric passed
    expect(asked).toEqual(['hello, kind sir']);
    expect(grades).toEqual([
      { baseReward: 0, judged: [true, false] },
      { baseReward: 0, judged: null },
      { baseReward: 0, judged: null },
    ]);
    const records = recordsOf(
      batchOf(
        rubricPrompt,
        rollouts,
        grades.map((g) => g.judged),
      ),
    ).filter((r) => r.role === 'policy');
    expect(records.map((r) => r.checks!.map((c) => [c.by, c.passed]))).toEqual([
      [
        ['program', true],
        ['judge', true],
        ['judge', false],
      ],
      [
        ['program', false],
        ['judge', null],
        ['judge', null],
      ],
      [
        ['program', false],
        ['judge', null],
        ['judge', null],
      ],
    ]);
  });
});
