// Multi-turn rollout loop (README "Tool-call format"): generate until a stop token of the chat
// format (<|/call|>/<|eos|>, or a chat template's end of turn) or a budget; run the turn's tool
// calls; append the tool outputs as tokens (masked); continue. Token-in/token-out: model tokens
// are kept exactly as sampled, only tool outputs (and the format's turn headers) are encoded.
import type { InferenceEngine, SampledSequence } from '@anneal/engines';
import type { ChatFormat } from '../format/chatFormat.ts';
import type { SearchWebTool, ToolSession } from '../search/searchWeb.ts';
import { segmentSeed } from './seeds.ts';
import { RolloutSequence } from './sequence.ts';
import type { Rollout, RolloutConfig, RolloutFinish, RolloutRequest } from './types.ts';

export interface RolloutEnv {
  engine: InferenceEngine;
  format: ChatFormat;
  tool: SearchWebTool;
  config: RolloutConfig;
}

const DEFAULT_MIN_GENERATION = 8;

function remainingBudget(seq: RolloutSequence, config: RolloutConfig): number {
  const contextLeft = config.maxContextTokens - seq.length;
  const responseLeft = config.maxResponseTokens - (seq.length - seq.promptLength);
  return Math.min(contextLeft, responseLeft);
}

async function sampleSegment(
  env: RolloutEnv,
  seq: RolloutSequence,
  n: number,
  seed: number | undefined,
  signal?: AbortSignal,
): Promise<SampledSequence[]> {
  const { config, format } = env;
  const samples = await env.engine.sample(
    {
      prompt: seq.tokens,
      n,
      maxTokens: remainingBudget(seq, config),
      temperature: config.temperature,
      topP: config.topP,
      stopTokenIds: format.stopTokenIds,
      ...(seed === undefined ? {} : { seed }),
      ...(config.model === undefined ? {} : { model: config.model }),
      ...(config.logprobs === false && { logprobs: false }),
    },
    signal,
  );
  if (samples.length !== n)
    throw new Error(`engine returned ${samples.length} samples, asked ${n}`);
  return samples;
}

function finishRollout(
  seq: RolloutSequence,
  session: ToolSession,
  finish: RolloutFinish,
  answer: string | null,
): Rollout {
  seq.compact();
  return {
    tokens: seq.tokens,
    promptLength: seq.promptLength,
    lossMask: seq.lossMask,
    logprobs: seq.logprobs,
    generatedTokens: seq.generatedCount(),
    toolCalls: session.calls,
    toolErrors: session.errors,
    refusedCalls: session.refused,
    calls: [...session.records],
    answer,
    finish,
    truncated: finish === 'length' || finish === 'context_overflow',
    sampledTurns: seq.turns,
  };
}

/** Continue one rollout from its first sampled segment until it answers or runs out of budget. */
async function continueRollout(
  env: RolloutEnv,
  seq: RolloutSequence,
  first: SampledSequence,
  seeds: { seed: number | undefined; index: number },
  signal?: AbortSignal,
): Promise<Rollout> {
  const { format, config } = env;
  const session = env.tool.session();
  const reserve = config.minGenerationTokens ?? DEFAULT_MIN_GENERATION;
  let sample = first;
  for (let turn = 1; ; turn++) {
    seq.appendGenerated(sample);
    // Decoded once: the turn's parse reads it, and the rollout keeps it for the ledger.
    const text = format.tokenizer.decode(sample.tokens);
    const action = format.parseTurn(sample.tokens, text);
    if (sample.tokens.length > 0) {
      const toolCalls = action.kind === 'tool_calls' ? action.calls.length : 0;
      seq.turns.push({ text, toolCalls });
    }
    if (sample.finishReason === 'context_overflow')
      return finishRollout(seq, session, 'context_overflow', null);
    if (action.kind === 'answer') return finishRollout(seq, session, 'answer', action.answer);
    if (action.kind === 'no_answer') return finishRollout(seq, session, 'no_answer', null);
    if (action.kind === 'incomplete') {
      const out: RolloutFinish = sample.finishReason === 'stop' ? 'no_answer' : 'length';
      return finishRollout(seq, session, out, null);
    }
    const outputs: string[] = [];
    for (const call of action.calls) {
      const record = call.ok
        ? await session.call(call.query, signal)
        : session.malformed(call.detail);
      outputs.push(record.output);
    }
    const results = format.encodeToolResults(outputs, remainingBudget(seq, config) - reserve);
    if (results === undefined) return finishRollout(seq, session, 'length', null);
    seq.appendEnvironment(results);
    if (remainingBudget(seq, config) <= 0) return finishRollout(seq, session, 'length', null);
    const seed = seeds.seed === undefined ? undefined : segmentSeed(seeds.seed, seeds.index, turn);
    [sample] = (await sampleSegment(env, seq, 1, seed, signal)) as [SampledSequence];
  }
}

/** One GRPO group: the first segment of all n rollouts in one request (shared prompt), then each
 * rollout continues on its own; the engine decides how to batch the concurrent requests. */
export async function runRolloutGroup(
  env: RolloutEnv,
  request: RolloutRequest,
  signal?: AbortSignal,
): Promise<Rollout[]> {
  const sequence = () => new RolloutSequence(request.prompt, env.config.logprobs !== false);
  const promptSeq = sequence();
  if (remainingBudget(promptSeq, env.config) <= 0) {
    // Like a vLLM context overflow: the rollouts are truncated, the run goes on.
    return Array.from({ length: request.n }, () =>
      finishRollout(sequence(), env.tool.session(), 'context_overflow', null),
    );
  }
  return allOrAbort(signal, async (inner) => {
    const firsts = await sampleSegment(env, promptSeq, request.n, request.seed, inner);
    return firsts.map((first, index) =>
      continueRollout(env, sequence(), first, { seed: request.seed, index }, inner),
    );
  });
}

/** Many groups concurrently (Promise-based); results in request order. */
export function runRollouts(
  env: RolloutEnv,
  requests: readonly RolloutRequest[],
  signal?: AbortSignal,
): Promise<Rollout[][]> {
  return allOrAbort(signal, (inner) =>
    Promise.resolve(requests.map((request) => runRolloutGroup(env, request, inner))),
  );
}

/** Promise.all that aborts the siblings' engine requests when one of them fails. */
async function allOrAbort<T>(
  signal: AbortSignal | undefined,
  start: (inner: AbortSignal) => Promise<Promise<T>[]>,
): Promise<T[]> {
  const controller = new AbortController();
  const inner = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal;
  try {
    const pending = (await start(inner)).map((p) =>
      p.catch((err: unknown) => {
        controller.abort(err);
        throw err;
      }),
    );
    try {
      return await Promise.all(pending);
    } catch (error) {
      await Promise.allSettled(pending); // the others, aborted, have stopped too
      throw error;
    }
  } finally {
    controller.abort(); // nothing is left running once this returns
  }
}
