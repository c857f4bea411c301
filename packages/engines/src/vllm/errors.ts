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

/** Prompt + max_tokens beyond the model's window: a 400 naming "maximum context length". */
export function isContextOverflow(reply: HttpReply): boolean {
  return reply.status === 400 && readVllmError(reply).message.includes('maximum context length');
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
