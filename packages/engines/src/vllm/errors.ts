// vLLM error replies -> EngineError. Accepts both envelopes (docs/engines.md "Errors"):
// new `{"error":{message,type,param,code}}`, old `{"object":"error",message,type,...}`,
// and the API-key middleware's 401 `{"error":"Unauthorized"}`.
import { ENGINE_ERROR_CODES, EngineError, describeHttpFailure } from '../http/errors.ts';
import type { EngineErrorContext } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';

export interface VllmErrorInfo {
  message: string;
  type?: string;
}

export function readVllmError(reply: HttpReply): VllmErrorInfo {
  const body = reply.json;
  if (isObject(body)) {
    const nested = body['error'];
    if (isObject(nested) && typeof nested['message'] === 'string') {
      return { message: nested['message'], type: stringOrUndefined(nested['type']) };
    }
    if (typeof nested === 'string') return { message: nested };
    if (body['object'] === 'error' && typeof body['message'] === 'string') {
      return { message: body['message'], type: stringOrUndefined(body['type']) };
    }
    if (body['detail'] !== undefined) return { message: JSON.stringify(body['detail']) };
  }
  const text = reply.text.trim();
  return { message: text.length > 0 ? text.slice(0, 500) : '(empty body)' };
}

/** 5xx and 429 are worth retrying; other 4xx are the request's fault. */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 429;
}

export function vllmHttpError(
  context: EngineErrorContext & { url: string; route: string },
  reply: HttpReply,
): EngineError {
  const info = readVllmError(reply);
  return new EngineError(
    ENGINE_ERROR_CODES.http,
    { ...context, status: reply.status, serverMessage: info.message, serverType: info.type },
    describeHttpFailure(reply.status, info.type, info.message),
    { retryable: isRetryableStatus(reply.status) },
  );
}

/** The context-overflow wordings of vLLM's 400 replies, each with the window it names:
 * - up to v0.11.x (`serving_engine.py` `_validate_input`): "This model's maximum context length
 *   is X tokens. However, you requested …";
 * - newer servers (`vllm/renderers/params.py` `_token_len_check`): "You passed P input tokens and
 *   requested M output tokens. However, the model's context length is only X tokens, …";
 * - newer servers, `max_tokens` alone above the window (`TokenizeParams.__post_init__`, whose
 *   f-string really lacks the space): "max_tokens=Mcannot be greater than
 *   max_model_len=max_total_tokens=X. …". */
const OVERFLOW_WORDINGS: readonly RegExp[] = [
  /maximum context length is (\d+)/,
  /the model's context length is only (\d+) tokens/,
  /cannot be greater than max_model_len=(?:max_total_tokens=)?(\d+)/,
];

/** The window X an overflow message names; undefined when the message is no overflow (or names
 * no usable number). */
export function overflowWindowOf(message: string): number | undefined {
  for (const wording of OVERFLOW_WORDINGS) {
    const match = wording.exec(message);
    if (!match) continue;
    const limit = Number(match[1]);
    return Number.isSafeInteger(limit) && limit > 0 ? limit : undefined;
  }
  return undefined;
}

/** The same wordings without the number (a reply that names no window is still an overflow). */
const OVERFLOW_MARKERS = /maximum context length|context length is only|greater than max_model_len/;

/** Prompt + max_tokens beyond the model's window: a 400 in any of the wordings above. */
export function isContextOverflow(reply: HttpReply): boolean {
  return reply.status === 400 && OVERFLOW_MARKERS.test(readVllmError(reply).message);
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
