// Trainer replies -> coded EngineErrors: 422 pydantic issues with their loc/msg, the two 409s
// (a reused seq_id vs a checkpoint name that already exists, told apart by the server's
// message), `{detail}` bodies, and anything else with its text.
import { ENGINE_ERROR_CODES, EngineError, describeHttpFailure } from '../http/errors.ts';
import type { EngineErrorCode, EngineErrorContext } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';

/** `body.model_id: Field required; body.forward_backward_input.loss_fn: Input should be …` */
export function formatValidationIssues(detail: unknown[]): string {
  return detail
    .map((issue) => {
      if (!isObject(issue)) return JSON.stringify(issue);
      const loc = Array.isArray(issue['loc']) ? issue['loc'].join('.') : '?';
      return `${loc}: ${typeof issue['msg'] === 'string' ? issue['msg'] : JSON.stringify(issue)}`;
    })
    .join('; ');
}

/** The server's message in a reply: `detail` (string or 422 list), `error`, or the text. */
export function readDetail(reply: HttpReply): string {
  const body = reply.json;
  if (isObject(body)) {
    const detail = body['detail'];
    if (typeof detail === 'string') return detail;
    if (Array.isArray(detail)) return formatValidationIssues(detail);
    if (detail !== undefined) return JSON.stringify(detail);
    const error = body['error'];
    if (typeof error === 'string') return error;
    if (isObject(error) && typeof error['message'] === 'string') return error['message'];
  }
  const text = reply.text.trim();
  return text.length > 0 ? text.slice(0, 500) : '(empty body)';
}

export function trainerHttpError(
  context: EngineErrorContext & { url: string; route: string },
  reply: HttpReply,
  seqId?: number,
): EngineError {
  const message = readDetail(reply);
  const full = { ...context, status: reply.status, serverMessage: message };
  let code: EngineErrorCode = ENGINE_ERROR_CODES.http;
  let detail = describeHttpFailure(reply.status, undefined, message);
  if (reply.status === 422) {
    code = ENGINE_ERROR_CODES.validation;
    detail = `HTTP 422 validation failed: ${message}`;
  } else if (reply.status === 409) {
    const conflict = conflictOf(message, context.route);
    if (conflict === 'checkpoint') {
      code = ENGINE_ERROR_CODES.checkpointExists;
      detail =
        `HTTP 409: a checkpoint with this name already exists for the model (the server keeps ` +
        `one checkpoint per (model_id, name); save under a new name): ${message}`;
    } else if (conflict === 'seq_id') {
      code = ENGINE_ERROR_CODES.seqConflict;
      detail =
        `HTTP 409: seq_id ${seqId ?? '?'} was already used with a different payload ` +
        `(the server keeps one request per (model_id, seq_id)): ${message}`;
    }
  }
  const retryable = reply.status >= 500 || reply.status === 429;
  return new EngineError(code, full, detail, { retryable });
}

/**
 * Which 409 the server sent. SkyRL (skyrl/tinker/api.py) answers "Checkpoint '<name>' already
 * exists for model '<id>'" for a reused checkpoint name and "Training request sequence number
 * was reused" for a reused seq_id; other servers word it differently, so the route decides
 * when the message does not: a save route's 409 is about its name.
 */
export function conflictOf(message: string, route: string): 'checkpoint' | 'seq_id' | 'other' {
  if (/checkpoint\b.*\balready exists/i.test(message)) return 'checkpoint';
  if (/sequence number|seq_id/i.test(message)) return 'seq_id';
  if (/\/(save_weights|save_weights_for_sampler)$/.test(route)) return 'checkpoint';
  if (/\/(forward|forward_backward|optim_step|load_weights|asample)$/.test(route)) return 'seq_id';
  return 'other';
}
