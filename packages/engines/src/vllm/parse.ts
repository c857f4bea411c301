// `/v1/completions` reply -> SampledSequence[] (token ids + sampling logprobs per choice).
// New servers (v0.10.2+) give `token_ids`; older ones only the logprob token strings
// `"token_id:{id}"` (with `return_tokens_as_token_ids`). Text is never re-tokenised.
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import type { EngineErrorContext } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';
import type { FinishReason, SampledSequence } from '../types.ts';
import { extractCompletion } from './fast-parse.ts';

const TOKEN_ID_PREFIX = 'token_id:';

/** vLLM finish reasons -> ours. `repetition` (newer servers) stopped a degenerate loop
 * before a natural end, so it counts as a truncation, like `length`. */
const FINISH_REASONS: Record<string, FinishReason> = {
  stop: 'stop',
  length: 'length',
  abort: 'abort',
  repetition: 'length',
};

/** A reply to a request sent without `logprobs` that has no `token_ids` either (a server older
 * than v0.10.2): its sampled ids are not in it, so the request must be sent again with them. */
export const LACKS_TOKEN_IDS = Symbol('completion without token ids');

/** A completion reply: fields extracted from the raw bytes (fast-parse.ts) when the reply is
 * what they expect, else the whole body parsed and checked here, with its error. `withLogprobs`:
 * whether the request asked for them (`logprobs: 0`); without, each choice's `logprobs` is null. */
export function parseCompletionReply(
  reply: HttpReply,
  expectedChoices: number,
  context: EngineErrorContext,
  withLogprobs?: true,
): SampledSequence[];
export function parseCompletionReply(
  reply: HttpReply,
  expectedChoices: number,
  context: EngineErrorContext,
  withLogprobs: boolean,
): SampledSequence[] | typeof LACKS_TOKEN_IDS;
export function parseCompletionReply(
  reply: HttpReply,
  expectedChoices: number,
  context: EngineErrorContext,
  withLogprobs = true,
): SampledSequence[] | typeof LACKS_TOKEN_IDS {
  const fast = reply.bytes && extractCompletion(reply.bytes, expectedChoices, withLogprobs);
  return fast ?? parseCompletion(reply.json, expectedChoices, context, withLogprobs);
}

export function parseCompletion(
  body: unknown,
  expectedChoices: number,
  context: EngineErrorContext,
  withLogprobs?: true,
): SampledSequence[];
export function parseCompletion(
  body: unknown,
  expectedChoices: number,
  context: EngineErrorContext,
  withLogprobs: boolean,
): SampledSequence[] | typeof LACKS_TOKEN_IDS;
export function parseCompletion(
  body: unknown,
  expectedChoices: number,
  context: EngineErrorContext,
  withLogprobs = true,
): SampledSequence[] | typeof LACKS_TOKEN_IDS {
  const fail = (detail: string): EngineError =>
    new EngineError(ENGINE_ERROR_CODES.response, context, `malformed completion: ${detail}`);
  if (!isObject(body) || !Array.isArray(body['choices'])) throw fail('no `choices` array');
  const choices: unknown[] = body['choices'];
  if (choices.length !== expectedChoices) {
    throw fail(`expected ${expectedChoices} choices (n), got ${choices.length}`);
  }
  const ordered = choices.map((choice, position) => {
    if (!isObject(choice)) throw fail(`choices[${position}] is not an object`);
    const index = typeof choice['index'] === 'number' ? choice['index'] : position;
    return { index, choice };
  });
  ordered.sort((a, b) => a.index - b.index);
  const unreadable = ({ choice }: { choice: Record<string, unknown> }) =>
    !hasLogprobs(choice) && !Array.isArray(choice['token_ids']);
  if (!withLogprobs && ordered.some(unreadable)) return LACKS_TOKEN_IDS;
  return ordered.map(({ choice }, position) =>
    withLogprobs || hasLogprobs(choice)
      ? parseChoice(choice, `choices[${position}]`, fail)
      : parseUnscoredChoice(choice, `choices[${position}]`, fail),
  );
}

const hasLogprobs = (choice: Record<string, unknown>): boolean =>
  choice['logprobs'] !== null && choice['logprobs'] !== undefined;

/** A choice of a request sent without `logprobs`: ids from `token_ids`, no logprobs. */
function parseUnscoredChoice(
  choice: Record<string, unknown>,
  where: string,
  fail: (detail: string) => EngineError,
): SampledSequence {
  const tokens = readTokenIds(choice, {}, where, fail);
  return { tokens, logprobs: null, finishReason: readFinishReason(choice, where, fail) };
}

function readFinishReason(
  choice: Record<string, unknown>,
  where: string,
  fail: (detail: string) => EngineError,
): FinishReason {
  const finish = choice['finish_reason'];
  const finishReason = typeof finish === 'string' ? FINISH_REASONS[finish] : undefined;
  if (finishReason === undefined) throw fail(`${where}.finish_reason ${JSON.stringify(finish)}`);
  return finishReason;
}

function parseChoice(
  choice: Record<string, unknown>,
  where: string,
  fail: (detail: string) => EngineError,
): SampledSequence {
  const logprobs = choice['logprobs'];
  if (!isObject(logprobs)) throw fail(`${where}.logprobs is missing (request sent logprobs: 0)`);
  const tokenLogprobs = logprobs['token_logprobs'];
  if (!Array.isArray(tokenLogprobs)) throw fail(`${where}.logprobs.token_logprobs is missing`);
  const tokens = readTokenIds(choice, logprobs, where, fail);
  if (tokenLogprobs.length !== tokens.length) {
    throw fail(
      `${where} has ${tokens.length} token ids but ${tokenLogprobs.length} token_logprobs`,
    );
  }
  // float32, as vLLM's sampler computes them (types.ts TokenValues) and the fast path reads them
  const values = new Float32Array(tokenLogprobs.length);
  tokenLogprobs.forEach((value: unknown, i) => {
    if (typeof value !== 'number') throw fail(`${where}.logprobs.token_logprobs[${i}] is ${value}`);
    values[i] = value;
  });
  return { tokens, logprobs: values, finishReason: readFinishReason(choice, where, fail) };
}

function readTokenIds(
  choice: Record<string, unknown>,
  logprobs: Record<string, unknown>,
  where: string,
  fail: (detail: string) => EngineError,
): number[] {
  const direct = choice['token_ids'];
  if (Array.isArray(direct)) {
    return direct.map((id: unknown, i) => {
      if (!Number.isInteger(id)) throw fail(`${where}.token_ids[${i}] is ${String(id)}`);
      return id as number;
    });
  }
  const strings = logprobs['tokens'];
  if (!Array.isArray(strings)) {
    throw fail(
      `${where} has neither token_ids (vLLM >= 0.10.2) nor "token_id:<id>" logprob tokens ` +
        '(return_tokens_as_token_ids)',
    );
  }
  return strings.map((token: unknown, i) => {
    const id = typeof token === 'string' ? parseTokenIdString(token) : undefined;
    if (id === undefined) {
      throw fail(`${where}.logprobs.tokens[${i}] ${JSON.stringify(token)} is not "token_id:<id>"`);
    }
    return id;
  });
}

/** `"token_id:1234"` -> 1234. */
export function parseTokenIdString(token: string): number | undefined {
  if (!token.startsWith(TOKEN_ID_PREFIX)) return undefined;
  const digits = token.slice(TOKEN_ID_PREFIX.length);
  return /^\d+$/.test(digits) ? Number(digits) : undefined;
}
