// Bodies of the embedded sampler server (sampler-server.ts) in the shapes of vLLM's
// OpenAI-compatible server that Anneal's vLLM client reads (../vllm/wire.ts, docs/engines.md):
// the v0.10.2+ error envelope, `/v1/completions` requests with token-id prompts, replies with
// `token_ids` and the sampled token's logprob. The request checks follow vLLM's 400s where this
// server can do what vLLM does, and name the field where it cannot (no top-k, min-p, penalties
// or top alternatives: the embedded ONNX sampler draws from temperature + top-p only).
import { randomUUID } from 'node:crypto';
import type { CompletionResponse, ErrorEnvelopeNew } from '../vllm/wire.ts';
import type { ScoredSequence } from '../types.ts';
import { ByteTokenizer } from './tokenizer.ts';

export class VllmHttpError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }

  body(): ErrorEnvelopeNew {
    return { error: { message: this.message, type: this.type, param: null, code: this.status } };
  }
}

export const badRequest = (message: string) => new VllmHttpError(400, 'BadRequestError', message);

export interface ParsedCompletion {
  model: string;
  prompt: number[];
  n: number;
  maxTokens: number;
  temperature: number;
  topP: number;
  seed: number | undefined;
  stopTokenIds: number[];
  /** `logprobs` 0 (the sampled token's logprob) or null/absent (none). */
  logprobs: boolean;
  tokenIds: boolean;
  tokensAsIds: boolean;
}

/** A `/v1/completions` body, checked; throws a 400 naming the field. */
export function parseCompletionRequest(body: unknown): ParsedCompletion {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('request body must be a JSON object');
  }
  const r = body as Record<string, unknown>;
  if (typeof r['model'] !== 'string') throw badRequest('model: Field required');
  const prompt = r['prompt'];
  if (!Array.isArray(prompt) || prompt.length === 0 || !prompt.every(isTokenId)) {
    throw badRequest('prompt must be a non-empty list of token ids (one prompt per request)');
  }
  const int = (field: string, fallback: number, min: number): number => {
    const value = r[field] ?? fallback;
    if (!Number.isInteger(value) || (value as number) < min) {
      throw badRequest(`${field} must be at least ${min}, got ${JSON.stringify(r[field])}`);
    }
    return value as number;
  };
  const n = int('n', 1, 1);
  const maxTokens = int('max_tokens', 16, 1); // vLLM's default 16
  const temperature = r['temperature'] ?? 1;
  if (typeof temperature !== 'number' || !(temperature >= 0)) {
    throw badRequest(`temperature must be non-negative, got ${JSON.stringify(temperature)}`);
  }
  const topP = r['top_p'] ?? 1;
  if (typeof topP !== 'number' || !(topP > 0 && topP <= 1)) {
    throw badRequest(`top_p must be in (0, 1], got ${JSON.stringify(topP)}`);
  }
  const neutral: Array<[string, unknown]> = [
    ['top_k', -1],
    ['min_p', 0],
    ['repetition_penalty', 1],
    ['presence_penalty', 0],
    ['frequency_penalty', 0],
  ];
  for (const [field, value] of neutral) {
    if (r[field] !== undefined && r[field] !== null && r[field] !== value) {
      throw badRequest(
        `${field} must be ${String(value)} on the embedded sampler (it samples with temperature ` +
          `and top_p only), got ${JSON.stringify(r[field])}`,
      );
    }
  }
  const seed = r['seed'];
  if (seed !== undefined && seed !== null && !Number.isInteger(seed)) {
    throw badRequest(`seed must be an integer, got ${JSON.stringify(seed)}`);
  }
  const stop = r['stop_token_ids'] ?? [];
  if (!Array.isArray(stop) || !stop.every(isTokenId)) {
    throw badRequest('stop_token_ids must be a list of token ids');
  }
  const logprobs = r['logprobs'];
  if (logprobs !== undefined && logprobs !== null && logprobs !== 0) {
    throw badRequest(
      `logprobs must be 0 on the embedded sampler (it reports the sampled token's logprob, no ` +
        `top alternatives), got ${JSON.stringify(logprobs)}`,
    );
  }
  return {
    model: r['model'],
    prompt: prompt as number[],
    n,
    maxTokens,
    temperature,
    topP,
    seed: typeof seed === 'number' ? seed : undefined,
    stopTokenIds: stop as number[],
    logprobs: logprobs === 0,
    tokenIds: r['return_token_ids'] === true,
    tokensAsIds: r['return_tokens_as_token_ids'] === true,
  };
}

/** vLLM v0.11's 400 for a prompt + max_tokens past the window (the client's errors.ts reads the
 * window from it). */
export function contextOverflow(maxModelLen: number, prompt: number, completion: number) {
  return badRequest(
    `This model's maximum context length is ${maxModelLen} tokens. However, you requested ` +
      `${prompt + completion} tokens (${prompt} in the messages, ${completion} in the ` +
      'completion). Please reduce the length of the messages or completion.',
  );
}

const tokenizer = new ByteTokenizer();

/** The reply: `model` is the weight set that served it (vLLM: `model_name(lora_request)`). */
export function completionReply(
  request: ParsedCompletion,
  served: string,
  sequences: readonly ScoredSequence[],
): CompletionResponse & Record<string, unknown> {
  const choices = sequences.map((seq, index) => {
    const pieces = seq.tokens.map((id) => decode([id]));
    let offset = 0;
    const offsets = pieces.map((piece) => (offset += piece.length) - piece.length);
    const tokens = request.tokensAsIds ? seq.tokens.map((id) => `token_id:${id}`) : pieces;
    const last = seq.tokens.at(-1);
    const stopped = seq.finishReason === 'stop';
    return {
      index,
      text: decode(seq.tokens),
      logprobs: request.logprobs
        ? {
            text_offset: offsets,
            token_logprobs: [...seq.logprobs],
            tokens,
            top_logprobs: tokens.map((token, i) => ({ [token]: seq.logprobs[i] as number })),
          }
        : null,
      finish_reason: stopped ? ('stop' as const) : ('length' as const),
      // vLLM: the stop token id when a stop_token_ids entry ended it, null at EOS or length.
      stop_reason:
        stopped && last !== undefined && request.stopTokenIds.includes(last) ? last : null,
      ...(request.tokenIds && { token_ids: [...seq.tokens], prompt_token_ids: request.prompt }),
      prompt_logprobs: null,
    };
  });
  const completion = sequences.reduce((sum, s) => sum + s.tokens.length, 0);
  return {
    id: `cmpl-${randomUUID()}`,
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: served,
    choices,
    usage: {
      prompt_tokens: request.prompt.length,
      completion_tokens: completion,
      total_tokens: request.prompt.length + completion,
      prompt_tokens_details: null,
    },
  };
}

function decode(ids: readonly number[]): string {
  try {
    return tokenizer.decode(ids);
  } catch {
    return ''; // ids of a model with a larger vocabulary than the byte tokenizer's
  }
}

function isTokenId(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0;
}
