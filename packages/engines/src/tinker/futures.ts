// Futures (docs/engines.md "Futures"): an async POST answers with a request id, and the result
// comes from `retrieve_future`. Servers differ in how they say "not yet":
//   - SkyRL (skyrl/tinker/api.py) holds each retrieve_future call up to 300 s, then answers
//     408; a failed request is 400 `{detail}`; an unknown id is 404.
//   - Hosted Tinker (tinker SDK lib/api_future_impl.py) may also answer 200
//     `{type: "try_again", queue_state}` (poll again), 200 `{error, category}` (failed),
//     410 (the promise expired: the result is gone), and its POST replies may carry
//     `{request_id, model_id}` without `status`.
// So one call waits longer than the server's hold (`callTimeoutMs`), and the whole wait is
// bounded by one deadline per operation, never by a retry count: network errors, timeouts,
// 5xx and 429 while polling are retried with backoff until that deadline.
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import type { EngineErrorCode } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';
import { backoffDelay, isRetryableEngineError } from '../http/retry.ts';
import { readDetail } from './errors.ts';
import type { TinkerTransport } from './transport.ts';
import { TINKER_ROUTES } from './wire.ts';
import type { RetrieveFutureRequest } from './wire.ts';

/** What the future is for, in error messages: e.g. `forward_backward (model m-1, seq_id 4)`. */
export type FutureLabel = string;

/** A bare 400 (no JSON body) may come from a proxy rather than the server: retried this often
 * (the tinker SDK's budget) before it counts as a failure. */
const BARE_BAD_REQUEST_RETRIES = 3;

/** True when a POST reply is a future to poll rather than the result itself. */
export function isFutureReply(reply: unknown): reply is { request_id: string } {
  return (
    isObject(reply) &&
    typeof reply['request_id'] === 'string' &&
    (reply['status'] === undefined || reply['status'] === 'pending')
  );
}

/** The absolute time (on the transport's clock) by which an operation submitted now must end. */
export function operationDeadline(transport: TinkerTransport): number {
  return transport.timers.now() + transport.config.futurePoll.deadlineMs;
}

/** Reads a result straight from a result reply's bytes, or returns undefined (bails): the body
 * is then parsed and classified as any other. It must bail on every body `classify` would not
 * call a result (`{type: "try_again"}`, `{error}`). */
export type ResultReader<T> = (bytes: Uint8Array) => T | undefined;

/** A future's result: `read` what the reader made of the reply's bytes, `body` the parsed
 * result (no reader, it bailed, or the POST reply was the result itself). */
export type FutureResult<T> = { kind: 'read'; value: T } | { kind: 'body'; value: unknown };

/** Resolve a POST reply: poll its future when it is one, else it is already the result. */
export async function resultOf(
  transport: TinkerTransport,
  reply: unknown,
  label: FutureLabel,
  deadline = operationDeadline(transport),
): Promise<unknown> {
  return (await readResultOf(transport, reply, label, deadline)).value;
}

/** resultOf, with the future's result reply given first to `read` (the body is parsed only
 * when it bails). */
export async function readResultOf<T>(
  transport: TinkerTransport,
  reply: unknown,
  label: FutureLabel,
  deadline: number,
  read?: ResultReader<T>,
): Promise<FutureResult<T>> {
  if (isFutureReply(reply)) return awaitFuture(transport, reply.request_id, label, deadline, read);
  return { kind: 'body', value: reply };
}

type Outcome<T> =
  | { kind: 'done'; result: FutureResult<T> }
  | { kind: 'pending'; queueState?: string }
  | { kind: 'retry'; error: string; bareBadRequest?: true }
  | { kind: 'failed'; error: EngineError };

async function awaitFuture<T>(
  transport: TinkerTransport,
  requestId: string,
  label: FutureLabel,
  deadline: number,
  read?: ResultReader<T>,
): Promise<FutureResult<T>> {
  const { timers, config } = transport;
  const poll = config.futurePoll;
  const route = TINKER_ROUTES.retrieveFuture;
  const body: RetrieveFutureRequest = { request_id: requestId };
  const started = timers.now();
  let pendingDelay = poll.initialDelayMs;
  let transientRetries = 0;
  let bareBadRequests = 0;
  let lastState = 'no answer yet';
  for (let polls = 1; ; polls += 1) {
    const remaining = deadline - timers.now();
    if (remaining <= 0) {
      throw new EngineError(
        ENGINE_ERROR_CODES.futureTimeout,
        transport.context(route),
        `${label}: request ${requestId} not done after ${Math.round(timers.now() - started)} ms ` +
          `(operation deadline ${poll.deadlineMs} ms, ${polls - 1} polls; last: ${lastState})`,
      );
    }
    let outcome: Outcome<T>;
    try {
      const reply = await transport.post(route, body, {
        accept: [400, 404, 408, 410],
        attempts: 1,
        timeoutMs: Math.min(poll.callTimeoutMs, remaining),
      });
      try {
        outcome = classify(transport, reply, requestId, label, bareBadRequests, read);
      } finally {
        reply.release?.(); // the outcome holds copies: the reader's arrays, parsed JSON, text
      }
      transientRetries = 0;
    } catch (error) {
      // 5xx, 429, connection loss, a call that outlived callTimeoutMs: poll again later.
      if (!isRetryableEngineError(error)) throw error;
      outcome = { kind: 'retry', error: (error as Error).message };
    }
    switch (outcome.kind) {
      case 'done':
        transport.emit({ type: 'future:resolved', endpoint: config.name, requestId, polls });
        return outcome.result;
      case 'failed':
        throw outcome.error;
      case 'pending': {
        lastState = outcome.queueState ? `pending (queue ${outcome.queueState})` : 'pending';
        transport.emit({
          type: 'future:pending',
          endpoint: config.name,
          requestId,
          polls,
          ...(outcome.queueState === undefined ? {} : { queueState: outcome.queueState }),
        });
        await timers.sleep(
          Math.min(pendingDelay, Math.max(0, deadline - timers.now())),
          transport.signal,
        );
        pendingDelay = Math.min(pendingDelay * poll.factor, poll.maxDelayMs);
        break;
      }
      case 'retry': {
        lastState = outcome.error;
        if (outcome.bareBadRequest) bareBadRequests += 1;
        const delayMs = Math.min(
          backoffDelay(config.retry, transientRetries, transport.rng),
          Math.max(0, deadline - timers.now()),
        );
        transientRetries += 1;
        transport.emit({
          type: 'future:poll_retry',
          endpoint: config.name,
          requestId,
          delayMs,
          error: outcome.error,
        });
        await timers.sleep(delayMs, transport.signal);
        break;
      }
    }
  }
}

function classify<T>(
  transport: TinkerTransport,
  reply: HttpReply,
  requestId: string,
  label: FutureLabel,
  bareBadRequests: number,
  read: ResultReader<T> | undefined,
): Outcome<T> {
  const context = transport.context(TINKER_ROUTES.retrieveFuture);
  const failed = (code: EngineErrorCode, what: string): Outcome<T> => {
    const detail = readDetail(reply);
    return {
      kind: 'failed',
      error: new EngineError(
        code,
        { ...context, status: reply.status, serverMessage: detail },
        `${label}: request ${requestId} ${what}: ${detail}`,
      ),
    };
  };
  switch (reply.status) {
    case 408:
      return { kind: 'pending', ...queueStateOf(reply.json) };
    case 410:
      return {
        kind: 'failed',
        error: new EngineError(
          ENGINE_ERROR_CODES.futureExpired,
          { ...context, status: 410, serverMessage: readDetail(reply) },
          `${label}: request ${requestId} expired on the server (HTTP 410): its result is ` +
            'gone; the operation may or may not have run, so it is not resubmitted',
        ),
      };
    case 404:
      return failed(ENGINE_ERROR_CODES.futureFailed, 'is unknown to the server (HTTP 404)');
    case 400:
      if (reply.json === undefined && bareBadRequests < BARE_BAD_REQUEST_RETRIES) {
        return {
          kind: 'retry',
          error: `HTTP 400 without a body: ${reply.text.slice(0, 100)}`,
          bareBadRequest: true,
        };
      }
      return failed(ENGINE_ERROR_CODES.futureFailed, 'failed');
  }
  // A result the reader takes from the bytes is never decoded or parsed whole.
  const value = read !== undefined && reply.bytes !== undefined ? read(reply.bytes) : undefined;
  if (value !== undefined) return { kind: 'done', result: { kind: 'read', value } };
  const body = reply.json;
  if (isObject(body) && body['type'] === 'try_again') {
    return { kind: 'pending', ...queueStateOf(body) };
  }
  if (isObject(body) && 'error' in body) {
    const category = typeof body['category'] === 'string' ? ` [${body['category']} error]` : '';
    return failed(ENGINE_ERROR_CODES.futureFailed, `failed${category}`);
  }
  return { kind: 'done', result: { kind: 'body', value: body } };
}

function queueStateOf(body: unknown): { queueState?: string } {
  return isObject(body) && typeof body['queue_state'] === 'string'
    ? { queueState: body['queue_state'] }
    : {};
}
