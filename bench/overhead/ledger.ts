// What the rollout ledger costs per GRPO step at the production shape (docs/architecture.md "The
// rollout ledger"): the worker's own record builder (@anneal/worker ledgerRecords: decode every
// turn with Qwen3's tokenizer, tool calls, reward parts, ratios) and the store's writer
// (JSON lines, one Brotli stream per group on libuv's thread pool, temp + rename, then the commit
// rename) over 32 groups × 16 rollouts × 4096 tokens with their 512 reference rollouts, written
// as the worker writes it: records built from the turns the rollout loop decoded
// (`sampledTurns`, decoded here before timing: the loop's cost, measured in the run). Tokens
// are the fake sampler's of the run just measured ((seed + 7·t) mod 32,000: nearly every token
// different, the worst case for the decoder and the compressor), and the references are new every step
// (that run draws new prompts, so its reference cache rarely hits). CPU is process.cpuUsage over
// all threads (the compressor's pool included), main = this thread's busy time
// (performance.eventLoopUtilization); medians over the measured steps.
import { readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadChatTemplate, loadHfTokenizer } from '@anneal/engines';
import { QWEN3_TOKENIZER_CONFIG, QWEN3_TOKENIZER_JSON } from '@anneal/engines/testing';
import { createTemplateChatFormat, type Rollout } from '@anneal/envs';
import { commitLedgerStep, listLedgerSteps, stepDir, writeLedgerStep } from '@anneal/store';
import { ledgerRecords, type LedgerRecordInputs, type SharedParts } from '@anneal/worker';
import { WINDOW_STRIDE, modelTextIds } from '../pipeline/model-text.ts';

const GROUPS = 32;
const GROUP_SIZE = 16;
const TOKENS = 4096;
const TOOL_OUTPUT = 256; // tokens of one search result between the two assistant turns

const FAKE_VOCAB = 32_000; // bench/pipeline's fake vLLM samples ids below it

/** What the rollouts' tokens are: `text`, prose-like Qwen3 ids (pipeline/model-text.ts: a model's output);
 * `fake`, the fake sampler's ids of the measured run. */
export type TokenShape = 'text' | 'fake';

/** The turns as the rollout loop keeps them (Rollout.sampledTurns): each generated run decoded. */
function withSampledTurns(rollout: Rollout, decode: (ids: Int32Array) => string): Rollout {
  const turns: Array<{ text: string; toolCalls: number }> = [];
  const { tokens, lossMask } = rollout;
  for (let t = rollout.promptLength; t < tokens.length;) {
    if (lossMask[t] !== 1) {
      t++;
      continue;
    }
    const start = t;
    while (t < tokens.length && lossMask[t] === 1) t++;
    turns.push({ text: decode(tokens.slice(start, t)), toolCalls: turns.length === 0 ? 1 : 0 });
  }
  return { ...rollout, sampledTurns: turns };
}

function syntheticRollout(
  ids: readonly number[],
  toolText: string,
  seed: number,
  shape: TokenShape,
): Rollout {
  const prompt = 40;
  const tokens = Array.from({ length: prompt + TOKENS }, (_, t) =>
    t < prompt || shape === 'text'
      ? ids[(t + seed * WINDOW_STRIDE) % ids.length]!
      : (31 * seed + 7 * t) % FAKE_VOCAB,
  );
  const lossMask = tokens.map((_, t): number =>
    t >= prompt && !(t >= prompt + 1024 && t < prompt + 1024 + TOOL_OUTPUT) ? 1 : 0,
  );
  const logprobs = lossMask.map((m, t) => (m ? -0.05 - ((t * 7919 + seed) % 997) / 1000 : 0));
  const generated = lossMask.reduce((a, b) => a + b, 0);
  return {
    tokens: Int32Array.from(tokens),
    promptLength: prompt,
    lossMask: Uint8Array.from(lossMask),
    logprobs: Float32Array.from(logprobs),
    generatedTokens: generated,
    toolCalls: 1,
    toolErrors: 0,
    refusedCalls: 0,
    calls: [
      {
        query: 'bridge completed year',
        status: 'ok',
        failed: false,
        resultCount: 1,
        output: toolText,
      },
    ],
    answer: '1932',
    finish: 'answer',
    truncated: false,
  };
}

export interface LedgerCost {
  cpuMs: number;
  /** This thread's busy time (the event loop's share). */
  mainMs: number;
  wallMs: number;
  bytes: number;
}

/** Median CPU and wall time of writing one step's ledger, over `steps` steps after one warm-up. */
export async function measureLedgerStep(steps: number, shape: TokenShape): Promise<LedgerCost> {
  const tokenizer = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: '<|endoftext|>' });
  const format = createTemplateChatFormat({
    tokenizer,
    template: loadChatTemplate(QWEN3_TOKENIZER_CONFIG),
  });
  const ids = modelTextIds();
  const toolText = tokenizer.decode(Int32Array.from(ids.slice(0, TOOL_OUTPUT)));
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-bench-ledger-'));
  const cache = new WeakMap<Rollout, SharedParts>();
  const f64 = (n: number, f: (i: number) => number) =>
    Float64Array.from({ length: n }, (_, i) => f(i));
  const costs: LedgerCost[] = [];
  const decode = (t: Int32Array) => tokenizer.decode(t);
  try {
    for (let step = 1; step <= steps + 1; step++) {
      const rollouts = (offset: number) =>
        Array.from({ length: GROUPS }, (_, g) =>
          Array.from({ length: GROUP_SIZE }, (_, i) =>
            withSampledTurns(
              syntheticRollout(ids, toolText, offset + step * 1024 + g * GROUP_SIZE + i, shape),
              decode,
            ),
          ),
        );
      const groups = rollouts(0);
      const references = rollouts(512).map((group) => ({ rollouts: group, sampledAt: step }));
      const inputs: LedgerRecordInputs = {
        step,
        batch: {
          step,
          prompts: groups.map((_, g) => ({
            source: 'search-qa',
            example: {
              kind: 'qa',
              id: `q${g}`,
              prompt: `When was bridge ${g} completed?`,
              key: { answer: '1932' },
            },
            tokens: ids.slice(0, 40),
          })),
          groups,
          references,
          baseReward: groups.map((group) => group.map((_, i) => i % 2)),
          preferenceScore: groups.map((group) => group.map(() => 0.5)),
          judged: groups.map((group) => group.map(() => null)),
          scoring: { judgeCalls: 0, scoredTokens: 0 },
          scores: groups.map(() => ({
            toolBaseline: 1,
            toolPenalty: f64(GROUP_SIZE, () => 0),
            lengthPenalty: f64(GROUP_SIZE, (i) => i / 100),
            efficiencyPenalty: f64(GROUP_SIZE, (i) => i / 1000),
            reward: f64(GROUP_SIZE, (i) => (i % 2) * 0.5 - i / 1000),
            advantage: f64(GROUP_SIZE, (i) => (i % 2) - 0.5),
            zeroVariance: false,
          })),
          version: step - 1,
          rolloutSeconds: 0,
          rewardSeconds: 0,
        },
        format,
        ratios: groups
          .flat()
          .map((r) => ({ mean: 1, min: 0.9, max: 1.1, k3: 1e-4, tokens: r.generatedTokens })),
        trainerLogprobs: null,
        hasTokens: false,
        resultChars: 240,
        cache,
      };
      const cpu = process.cpuUsage();
      const busy = performance.eventLoopUtilization();
      const start = performance.now();
      const records = ledgerRecords(inputs);
      await writeLedgerStep(dir, {
        step,
        attempt: 1,
        policyVersion: step - 1,
        groupSize: GROUP_SIZE,
        hasTokens: false,
        sample: [0, 1, 2, 3],
        groups: records,
      });
      await commitLedgerStep(dir, step, { attempt: 1, rollbacks: 0 });
      const used = process.cpuUsage(cpu);
      const main = performance.eventLoopUtilization(busy).active;
      const bytes = (await ledgerBytesPerStep(dir)).at(-1)!;
      if (step > 1) {
        costs.push({
          cpuMs: (used.user + used.system) / 1000,
          mainMs: main,
          wallMs: performance.now() - start,
          bytes,
        });
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const median = (key: keyof LedgerCost) => {
    const xs = costs.map((c) => c[key]).sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)]!;
  };
  return {
    cpuMs: median('cpuMs'),
    mainMs: median('mainMs'),
    wallMs: median('wallMs'),
    bytes: median('bytes'),
  };
}

/** Bytes of each committed step directory of a run's ledger. */
export async function ledgerBytesPerStep(runDir: string): Promise<number[]> {
  return (await listLedgerSteps(runDir)).map((step) => {
    const dir = stepDir(runDir, step);
    return readdirSync(dir).reduce((n, f) => n + statSync(path.join(dir, f)).size, 0);
  });
}
