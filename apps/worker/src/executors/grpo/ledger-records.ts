// The rollout ledger's records of one GRPO step (@anneal/protocol RolloutRecord): every policy
// rollout with its reward parts, advantage and IS ratios, and the reference rollout it was
// scored against, group by group. Turns are the model-generated runs of the loss mask, decoded;
// each tool-calling turn owns the next calls of the rollout's call records, as many as the chat
// format parses from it (the last turn's too: a rollout whose budget ran out after its calls
// ran ends on them).
import { createHash } from 'node:crypto';
import { runCheck, type ChatFormat, type Rollout, type SampledTurn } from '@anneal/envs';
import {
  rolloutId,
  type RolloutRatio,
  type RolloutRecord,
  type RolloutTokens,
  type RolloutTurn,
  type RubricCheckResult,
} from '@anneal/protocol';
import type { PreparedBatch } from './prepared-batch.ts';
import type { RolloutRatioStats } from './lag-stats.ts';
import type { StepPrompt } from './sample-prompts.ts';

export interface LedgerRecordInputs {
  step: number;
  batch: PreparedBatch;
  format: ChatFormat;
  /** Per policy rollout, groups concatenated (TrainOutcome.rolloutRatios). */
  ratios: readonly (RolloutRatioStats | null)[];
  /** The trainer's logprobs (TrainOutcome.trainerLogprobs), with `hasTokens`. */
  trainerLogprobs: { values: Float32Array; offsets: Int32Array } | null;
  /** Records carry `tokens` (the spec's `ledger.tokens`). */
  hasTokens: boolean;
  /** Characters kept of each tool result. */
  resultChars: number;
  /** Parts already built of rollouts seen before (cached reference groups recur every step). */
  cache?: WeakMap<Rollout, SharedParts>;
}

/** What a record takes from its rollout alone. */
export type SharedParts = Pick<
  RolloutRecord,
  'turns' | 'answer' | 'finish' | 'truncated' | 'lengths' | 'toolCalls' | 'toolErrors'
>;

/** Same dataset example ⇒ same id, across steps and runs (the prompt text is part of it, so
 * an example edited under the same id is another prompt). */
export function promptId(prompt: StepPrompt): string {
  const hash = createHash('sha256');
  hash.update(`${prompt.source}\u0000${prompt.example.id}\u0000${prompt.example.prompt}`);
  return `p-${hash.digest('hex').slice(0, 16)}`;
}

/** [start, end) of each model-generated run of tokens after the prompt. */
function generatedRuns(rollout: Rollout): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  const mask = rollout.lossMask;
  let t = rollout.promptLength;
  while (t < mask.length) {
    if (mask[t] !== 1) {
      t++;
      continue;
    }
    const start = t;
    while (t < mask.length && mask[t] === 1) t++;
    runs.push([start, t]);
  }
  return runs;
}

/** A run of the loss mask read as the loop reads a sampled segment (rollouts without
 * `sampledTurns`). */
function readTurn(ids: readonly number[], format: ChatFormat): SampledTurn {
  const text = format.tokenizer.decode(ids);
  const action = format.parseTurn(ids, text);
  return { text, toolCalls: action.kind === 'tool_calls' ? action.calls.length : 0 };
}

function turnsOf(rollout: Rollout, format: ChatFormat, resultChars: number): RolloutTurn[] {
  let nextCall = 0;
  const runs = generatedRuns(rollout);
  // What the rollout loop decoded, one per run; decoded here only when it is not that.
  const sampled = rollout.sampledTurns?.length === runs.length ? rollout.sampledTurns : undefined;
  return runs.map(([start, end], k) => {
    // The last turn too: a rollout whose budget ran out after its calls ran ends on them.
    const turn = sampled?.[k] ?? readTurn(Array.from(rollout.tokens.subarray(start, end)), format);
    const count = turn.toolCalls;
    const calls = rollout.calls.slice(nextCall, nextCall + count).map((call) => ({
      name: 'search_web',
      arguments: { query: call.query },
      status: call.status,
      failed: call.failed,
      resultCount: call.resultCount,
      result: call.output.slice(0, resultChars),
      resultChars: call.output.length,
      ...(call.error !== undefined && { error: call.error }),
    }));
    nextCall += count;
    return { assistant: turn.text, calls };
  });
}

function checksOf(
  prompt: StepPrompt,
  answer: string | null,
  judged: readonly boolean[] | null,
): RubricCheckResult[] | null {
  const example = prompt.example;
  if (example.kind !== 'rubric') return null;
  let next = 0;
  return example.rubrics.map((rubric) =>
    rubric.check
      ? {
          text: rubric.text,
          by: 'program',
          passed: answer !== null && runCheck(rubric.check, answer),
        }
      : // what the judge said; null when it was not asked (no answer, or a program check failed)
        { text: rubric.text, by: 'judge', passed: judged?.[next++] ?? null },
  );
}

function tokensOf(
  rollout: Rollout,
  trainer: { values: Float32Array; start: number } | null,
): RolloutTokens {
  const ids = Array.from(rollout.tokens.subarray(rollout.promptLength));
  const generated: number[] = [];
  const sampler: number[] = [];
  const { logprobs } = rollout;
  for (let t = rollout.promptLength; t < rollout.tokens.length; t++) {
    if (rollout.lossMask[t] !== 1) continue;
    generated.push(t - rollout.promptLength);
    if (logprobs !== null) sampler.push(logprobs[t]!);
  }
  const encode = (values: Float32Array) =>
    Buffer.from(values.buffer, values.byteOffset, values.byteLength).toString('base64');
  return {
    ids,
    generated,
    // reference rollouts are sampled without them (setup.ts)
    ...(logprobs !== null && { samplerLogprobs: encode(Float32Array.from(sampler)) }),
    ...(trainer && {
      trainerLogprobs: encode(
        trainer.values.subarray(trainer.start, trainer.start + generated.length),
      ),
    }),
  };
}

const ratioOf = (stats: RolloutRatioStats | null): RolloutRatio | null =>
  stats && {
    mean: stats.mean,
    min: stats.min,
    max: stats.max,
    k3: stats.k3,
    generated: stats.tokens,
  };

/** Group g's records: its G policy rollouts, then its G reference rollouts. */
export function groupRecords(inputs: LedgerRecordInputs, g: number): RolloutRecord[] {
  const { step, batch, format, resultChars } = inputs;
  const group = batch.groups[g]!;
  let flat = batch.groups.slice(0, g).reduce((n, rollouts) => n + rollouts.length, 0);
  const prompt = batch.prompts[g]!;
  const score = batch.scores[g]!;
  const common = {
    step,
    group: g,
    promptId: promptId(prompt),
    source: prompt.source,
    exampleId: prompt.example.id,
    component: prompt.example.kind,
    prompt: { text: prompt.example.prompt },
  };
  const build = (rollout: Rollout): SharedParts => ({
    turns: turnsOf(rollout, format, resultChars),
    answer: rollout.answer,
    finish: rollout.finish,
    truncated: rollout.truncated,
    lengths: {
      prompt: prompt.tokens.length,
      generated: rollout.generatedTokens,
      response: rollout.tokens.length - rollout.promptLength,
      total: rollout.tokens.length,
    },
    toolCalls: rollout.toolCalls,
    toolErrors: rollout.toolErrors,
  });
  const shared = (rollout: Rollout): SharedParts => {
    const cached = inputs.cache?.get(rollout);
    if (cached) return cached;
    const parts = build(rollout);
    inputs.cache?.set(rollout, parts);
    return parts;
  };
  const policy = group.map((rollout, i): RolloutRecord => {
    const at = flat++;
    const baseReward = batch.baseReward[g]![i]!;
    const trainer = inputs.trainerLogprobs;
    return {
      id: rolloutId('policy', step, g, i),
      role: 'policy',
      index: i,
      pairedWith: rolloutId('reference', step, g, i),
      policyVersion: batch.version,
      ...common,
      ...shared(rollout),
      rewards: {
        baseReward,
        preferenceScore: batch.preferenceScore[g]![i]!,
        toolPenalty: score.toolPenalty[i]!,
        lengthPenalty: score.lengthPenalty[i]!,
        efficiencyPenalty: score.efficiencyPenalty[i]!,
        reward: score.reward[i]!,
      },
      advantage: score.advantage[i]!,
      ratio: ratioOf(inputs.ratios[at] ?? null),
      checks: checksOf(prompt, rollout.answer, batch.judged[g]?.[i] ?? null),
      ...(inputs.hasTokens && {
        tokens: tokensOf(
          rollout,
          trainer && { values: trainer.values, start: trainer.offsets[at]! },
        ),
      }),
    };
  });
  const references = batch.references[g]!.rollouts.map((rollout, i): RolloutRecord => ({
    id: rolloutId('reference', step, g, i),
    role: 'reference',
    index: i,
    pairedWith: rolloutId('policy', step, g, i),
    policyVersion: null,
    ...common,
    ...shared(rollout),
    rewards: null,
    advantage: null,
    ratio: null,
    checks: null,
    ...(inputs.hasTokens && { tokens: tokensOf(rollout, null) }),
  }));
  return [...policy, ...references];
}

/** Every group's records, in group order. */
export function ledgerRecords(inputs: LedgerRecordInputs): RolloutRecord[][] {
  return inputs.batch.groups.map((_, g) => groupRecords(inputs, g));
}
