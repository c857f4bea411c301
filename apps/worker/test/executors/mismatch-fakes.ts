// Test doubles for the mismatch probe (docs/recipe.md §2.6): a sampler whose rollouts are
// multi-turn with search calls, of lengths that vary by seed and grow with the calls made, and
// a trainer whose logprob of each sampled token is the sampler's plus an injected mismatch δ
// that is a known function of the token's context: so the true k3 of any set of rollouts is
// computable by hand (mismatchK3) and a probe's estimate can be compared with it.
// The injections mirror how real engines diverge: only after a tool result
// (long contexts, prefix-cached KV, other kernels past a length) or growing with the context.
import {
  ByteTokenizer,
  type AdamParams,
  type Datum,
  type ForwardResult,
  type InferenceEngine,
  type LossFn,
  type OptimStepResult,
  type SampledSequence,
  type SampleRequest,
  type SamplerWeights,
  type TrainerModel,
  type TokenIds,
} from '@anneal/engines';
import { SearchWebTool, type Rollout, type RolloutEnv } from '@anneal/envs';
import { createRng } from '@anneal/rl';
import { format } from './fakes.ts';

/** What a mismatch may depend on: the context before the token, its length and whether a tool
 * result is in it. */
export interface TokenContext {
  length: number;
  afterToolResult: boolean;
}

/** δ(context) = logp_train − logp_infer of the token that follows the context. */
export type Mismatch = (context: TokenContext) => number;

/** δ = `shift` once a tool result is in the context, 0 before. */
export const afterToolResult =
  (shift: number): Mismatch =>
  (context) =>
    context.afterToolResult ? shift : 0;

/** δ = `perToken` × context length. */
export const growingWithContext =
  (perToken: number): Mismatch =>
  (context) =>
    perToken * context.length;

/** The context of each position of `tokens`: position p's context is tokens[0..p). */
function contexts(tokens: TokenIds): TokenContext[] {
  let after = false;
  return Array.from(tokens, (t, p) => {
    const context = { length: p, afterToolResult: after };
    if (t === format.ids.resultEnd) after = true;
    return context;
  });
}

const tok = new ByteTokenizer();

/** Multi-turn rollouts: each turn calls search_web (at most 3 calls, probability 0.55 while
 * under) or answers; answers grow with the calls before them; every token's sampling logprob is
 * drawn from the request's seeded RNG. */
export class MultiTurnInference implements InferenceEngine {
  readonly requests: SampleRequest[] = [];
  private unseeded = 0;

  sample(request: SampleRequest): Promise<SampledSequence[]> {
    this.requests.push(request);
    const calls = request.prompt.filter((t) => t === format.ids.resultEnd).length;
    return Promise.resolve(
      Array.from({ length: request.n }, (_, k) => {
        const rng = createRng(
          request.seed === undefined ? 1e6 + this.unseeded++ : request.seed + k,
        );
        const call = calls < 3 && rng.next() < 0.55;
        const body = call
          ? [
              format.ids.callStart,
              ...tok.encode(`q${'x'.repeat(rng.int(1, 10))}`),
              format.ids.callEnd,
            ]
          : [
              format.ids.answer,
              ...tok.encode('a'.repeat(rng.int(4, 40 + 60 * calls))),
              format.ids.eos,
            ];
        const tokens = body.slice(0, request.maxTokens);
        return {
          tokens,
          logprobs: tokens.map(() => -0.1 - 1.5 * rng.next()),
          finishReason: tokens.length < body.length ? ('length' as const) : ('stop' as const),
        };
      }),
    );
  }

  loadWeights(_weights: SamplerWeights): Promise<void> {
    return Promise.resolve();
  }

  releaseWeights(_name: string): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** A search backend whose results are longer for longer queries (the context grows by them). */
export const searchTool = new SearchWebTool({
  name: 'fake-search',
  search: (query) =>
    Promise.resolve(
      [1, 2].map((i) => ({
        title: `result ${i} for ${query}`,
        url: `https://example.test/${i}`,
        snippet: 'evidence '.repeat(4 + query.length),
      })),
    ),
});

export const multiTurnEnv = (engine: InferenceEngine): RolloutEnv => ({
  engine,
  format,
  tool: searchTool,
  config: {
    maxContextTokens: 8192,
    maxResponseTokens: 2048,
    temperature: 1,
    topP: 1,
    model: 'policy',
  },
});

/** π_train = μ_infer + δ(context) at every target with a sampling logprob (datum position j
 * predicts token j + 1: its context is the model input up to j). */
export class MismatchTrainerModel implements TrainerModel {
  readonly id = 'fake-mismatch';
  forwards = 0;

  constructor(private readonly mismatch: Mismatch) {}

  forward(data: readonly Datum[], _lossFn: LossFn): Promise<ForwardResult> {
    this.forwards++;
    const logprobs = data.map((d) => {
      const infer = d.lossFnInputs['logprobs'];
      // the target of position j is token j + 1 of the sequence: its context is input[0..j]
      const context = contexts([...d.modelInput, 0]).slice(1);
      const out = new Float32Array(d.modelInput.length);
      for (let j = 0; j < out.length; j++) {
        if (infer?.[j]) out[j] = infer[j]! + this.mismatch(context[j]!);
      }
      return out;
    });
    return Promise.resolve({ logprobs, metrics: {} });
  }

  forwardBackward(data: readonly Datum[], lossFn: LossFn): Promise<ForwardResult> {
    return this.forward(data, lossFn);
  }

  optimStep(_params: AdamParams): Promise<OptimStepResult> {
    return Promise.resolve({ gradNorm: 1, metrics: {} });
  }

  saveWeights(name: string): Promise<string> {
    return Promise.resolve(`mem://${name}`);
  }

  loadWeights(): Promise<void> {
    return Promise.resolve();
  }

  saveWeightsForSampler(name: string): Promise<SamplerWeights> {
    return Promise.resolve({ name, path: `mem://sampler/${name}` });
  }

  deleteSamplerWeights(_path: string): Promise<boolean> {
    return Promise.resolve(true);
  }
}

/** Per rollout: Σ k3 over its generated tokens under `mismatch` (K_i) and their count (T_i). */
export function rolloutK3Sums(
  rollouts: readonly Rollout[],
  mismatch: Mismatch,
): Array<{ k3: number; tokens: number }> {
  return rollouts.map((r) => {
    const context = contexts(r.tokens);
    let k3 = 0;
    let tokens = 0;
    for (let t = r.promptLength; t < r.tokens.length; t++) {
      if (r.lossMask[t] !== 1) continue;
      const d = mismatch(context[t]!);
      k3 += Math.expm1(d) - d;
      tokens++;
    }
    return { k3, tokens };
  });
}

/** The true token-weighted k3 of `rollouts` under `mismatch`, by hand: Σ_i K_i / Σ_i T_i, the
 * mean over every generated token t of e^δ − 1 − δ, δ = mismatch(tokens before t) (docs/recipe.md
 * §2.4), and its standard error as a ratio estimator over n rollouts (docs/recipe.md §2.6):
 * SE² = n/(n − 1) · Σ_i (K_i − θ T_i)² / (Σ_i T_i)². */
export function mismatchK3(
  rollouts: readonly Rollout[],
  mismatch: Mismatch,
): { k3: number; stderr: number } {
  const sums = rolloutK3Sums(rollouts, mismatch);
  const n = sums.length;
  const k = sums.reduce((a, s) => a + s.k3, 0);
  const t = sums.reduce((a, s) => a + s.tokens, 0);
  const theta = k / t;
  const residual = sums.reduce((a, s) => a + (s.k3 - theta * s.tokens) ** 2, 0);
  return { k3: theta, stderr: n > 1 ? Math.sqrt((n / (n - 1)) * residual) / t : Infinity };
}
