// Which logprobs a live vLLM server reports — its `--logprobs-mode` — measured, not trusted, so
// `anneal endpoints check` can compare it with the operator config's declared `logprobsMode`
// (docs/engines.md "Logprobs and temperature").
//
// Method (read from vllm/v1/sample/sampler.py): `raw_logprobs` are log_softmax(logits) taken
// before penalties, temperature and top-k/top-p; `processed_logprobs` are log_softmax of the
// logits the token was drawn from, i.e. after temperature; the `*_logits` modes return the
// logits themselves. The first generated position depends only on the prompt, so two requests
// with the same prompt at T = 1 and at T = τ see the same logits z there. Within one request the
// gap between two tokens' values is z_a − z_b for raw modes and (z_a − z_b)/τ for processed
// ones (normalisation cancels in a gap, and top-k/top-p only drop tokens). Regressing the τ
// request's gaps on the T = 1 request's gaps over the shared top-K tokens gives a slope of 1
// (raw) or 1/τ (processed). Logprobs are ≤ 0 with Σ exp ≤ 1 over any subset; logits need not be.
import type { LogprobsMode } from '@anneal/protocol';
import { ENGINE_ERROR_CODES, EngineError } from './http/errors.ts';
import type { EngineErrorContext } from './http/errors.ts';
import { sendJson } from './http/request.ts';
import { realTimers } from './http/timing.ts';
import type { Timers } from './http/timing.ts';

/** A token's value in one position's top-K list, keyed by token id (or text on old servers). */
export type TopValues = ReadonlyMap<string, number>;

export interface LogprobsModeVerdict {
  /** What the server reports, or `unknown` when the two distributions cannot tell. */
  mode: LogprobsMode | 'unknown';
  /** Fitted slope of the τ request's gaps on the T = 1 request's: 1 raw, 1/τ processed. */
  slope: number;
  /** Tokens present in both top-K lists (the regression's points). */
  tokens: number;
  detail: string;
}

/** vLLM clamps −inf logprobs to this in JSON (vllm/entrypoints/openai: values ≥ −9999). */
const CLAMPED = -9998;
/** Below this spread (nats, T = 1 list) the gaps are too small to separate 1 from 1/τ. */
const MIN_SPREAD = 0.5;

function isLogprobList(values: readonly number[]): boolean {
  const max = Math.max(...values);
  const mass = values.reduce((sum, v) => sum + Math.exp(v - max), 0) * Math.exp(max);
  return max <= 1e-6 && mass <= 1 + 1e-3;
}

/**
 * Pure classification from the first generated position's top-K values of two requests with
 * the same prompt: `atOne` sampled at T = 1, `atTau` at T = `tau` (0 < τ, τ ≠ 1).
 */
export function classifyLogprobsMode(
  atOne: TopValues,
  atTau: TopValues,
  tau: number,
): LogprobsModeVerdict {
  if (!(tau > 0 && tau !== 1)) throw new RangeError(`tau must be > 0 and ≠ 1, got ${tau}`);
  const keys = [...atOne.keys()].filter((k) => {
    const a = atOne.get(k)!;
    const b = atTau.get(k);
    return b !== undefined && a > CLAMPED && b > CLAMPED;
  });
  const x = keys.map((k) => atOne.get(k)!);
  const y = keys.map((k) => atTau.get(k)!);
  const unknown = (detail: string): LogprobsModeVerdict => ({
    mode: 'unknown',
    slope: NaN,
    tokens: keys.length,
    detail,
  });
  if (keys.length < 3)
    return unknown(`only ${keys.length} tokens in both top-logprob lists (need 3)`);
  const spread = Math.max(...x) - Math.min(...x);
  if (spread < MIN_SPREAD)
    return unknown(`the T = 1 values span ${spread.toFixed(3)} nats: too flat to measure`);
  const mean = (v: number[]) => v.reduce((s, a) => s + a, 0) / v.length;
  const [mx, my] = [mean(x), mean(y)];
  let sxy = 0;
  let sxx = 0;
  x.forEach((xi, i) => {
    sxy += (xi - mx) * (y[i]! - my);
    sxx += (xi - mx) ** 2;
  });
  const slope = sxy / sxx;
  const tokens = keys.length;
  // Decide on the log scale, where raw (0) and processed (log 1/τ) are symmetric.
  const target = Math.log(1 / tau);
  const logSlope = slope > 0 ? Math.log(slope) : NaN;
  const tolerance = Math.abs(target) / 4;
  const processed = Math.abs(logSlope - target) <= tolerance;
  const raw = Math.abs(logSlope) <= tolerance;
  if (!processed && !raw) {
    return {
      mode: 'unknown',
      slope,
      tokens,
      detail: `gap slope ${slope.toFixed(3)} is neither 1 (raw) nor 1/τ = ${(1 / tau).toFixed(3)} (processed)`,
    };
  }
  const logprobs = isLogprobList(x) && isLogprobList(y);
  const mode: LogprobsMode = `${processed ? 'processed' : 'raw'}_${logprobs ? 'logprobs' : 'logits'}`;
  return {
    mode,
    slope,
    tokens,
    detail: `gap slope ${slope.toFixed(3)} over ${tokens} tokens (raw 1, processed ${(1 / tau).toFixed(3)}); values ${logprobs ? 'are' : 'are not'} normalised logprobs`,
  };
}

/** Why the measured mode contradicts the declared one, or undefined when it does not. */
export function logprobsModeMismatch(
  endpoint: string,
  declared: LogprobsMode,
  verdict: LogprobsModeVerdict,
): string | undefined {
  if (verdict.mode === declared) return undefined;
  if (verdict.mode === 'unknown')
    return `inference endpoint '${endpoint}': could not measure the logprobs mode (${verdict.detail}); declared ${declared}`;
  return (
    `inference endpoint '${endpoint}' declares logprobsMode ${declared} but its server reports ` +
    `${verdict.mode} (${verdict.detail}); set logprobsMode: ${verdict.mode} or restart vLLM with ` +
    `--logprobs-mode ${declared}`
  );
}

export interface LogprobsModeProbeOptions {
  /** Operator-registered endpoint name (for errors). */
  endpoint: string;
  /** One replica's base URL (each replica is its own server: probe each). */
  baseUrl: string;
  /** Served model name. */
  model: string;
  /** Prompt token ids; a natural-language prompt gives a peaked first-token distribution. */
  prompt: readonly number[];
  apiKey?: string;
  /** The second request's temperature τ (default 0.5). */
  temperature?: number;
  /** Top alternatives per request (default 10; vLLM's --max-logprobs default is 20). */
  topLogprobs?: number;
  timeoutMs?: number;
  timers?: Timers;
  signal?: AbortSignal;
}

/** Measures a live vLLM server's logprobs mode with two one-token completions. */
export async function probeLogprobsMode(
  options: LogprobsModeProbeOptions,
): Promise<LogprobsModeVerdict> {
  const tau = options.temperature ?? 0.5;
  const [atOne, atTau] = await Promise.all([
    firstTopValues(options, 1),
    firstTopValues(options, tau),
  ]);
  return classifyLogprobsMode(atOne, atTau, tau);
}

const ROUTE = '/v1/completions';

async function firstTopValues(options: LogprobsModeProbeOptions, temperature: number) {
  const context: EngineErrorContext & { url: string; route: string } = {
    engine: 'vLLM',
    endpoint: options.endpoint,
    url: options.baseUrl.replace(/\/+$/, ''),
    route: ROUTE,
  };
  const reply = await sendJson(context, {
    method: 'POST',
    body: {
      model: options.model,
      prompt: [...options.prompt],
      max_tokens: 1,
      temperature,
      top_p: 1,
      top_k: -1, // explicit: the model's generation_config must not truncate
      seed: 0,
      logprobs: options.topLogprobs ?? 10,
      return_tokens_as_token_ids: true,
    },
    headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
    timeoutMs: options.timeoutMs ?? 60_000,
    timers: options.timers ?? realTimers,
    ...(options.signal && { signal: options.signal }),
  });
  if (reply.status !== 200) {
    throw new EngineError(
      ENGINE_ERROR_CODES.http,
      { ...context, status: reply.status },
      `logprobs-mode probe at T = ${temperature}: HTTP ${reply.status}: ${reply.text.slice(0, 300)}`,
    );
  }
  return parseFirstTop(reply.json, context, temperature);
}

/** `choices[0].logprobs.top_logprobs[0]` of a completions reply, as a map. */
function parseFirstTop(json: unknown, context: EngineErrorContext, temperature: number) {
  const choices = (json as { choices?: unknown } | undefined)?.choices;
  const first = Array.isArray(choices) ? (choices[0] as Record<string, unknown>) : undefined;
  const top = (first?.['logprobs'] as { top_logprobs?: unknown } | null | undefined)?.top_logprobs;
  const entry = Array.isArray(top) ? (top[0] as unknown) : undefined;
  if (typeof entry !== 'object' || entry === null) {
    throw new EngineError(
      ENGINE_ERROR_CODES.response,
      context,
      `logprobs-mode probe at T = ${temperature}: no choices[0].logprobs.top_logprobs[0] in the reply`,
    );
  }
  const values = new Map<string, number>();
  for (const [key, value] of Object.entries(entry as Record<string, unknown>)) {
    if (typeof value === 'number' && Number.isFinite(value)) values.set(key, value);
  }
  return values;
}
