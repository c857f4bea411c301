// Futures: every async POST answers `{request_id, status: "pending"}`; the result comes from
// `retrieve_future` — 200 = done, 408 = still pending (poll again with growing waits, bounded
// in total), 400 `{detail}` = the request failed, 404 = unknown request id.
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import { readDetail } from './errors.ts';
import type { TinkerTransport } from './transport.ts';
import { TINKER_ROUTES } from './wire.ts';
import type { RetrieveFutureRequest } from './wire.ts';

/** What the future is for, in error messages: e.g. `forward_backward (model m-1, seq_id 4)`. */
export type FutureLabel = string;

/** Resolve a POST reply: poll its future when it is one, else it is already the result. */
export async function resultOf(
  transport: TinkerTransport,
  reply: unknown,
  label: FutureLabel,
): Promise<unknown> {
  if (isObject(reply) && typeof reply['request_id'] === 'string' && reply['status'] === 'pending') {
    return awaitFuture(transport, reply['request_id'], label);
  }
  return reply;
}

export async function awaitFuture(
  transport: TinkerTransport,
  requestId: string,
  label: FutureLabel,
): Promise<unknown> {
  const { timers, config } = transport;
  const poll = config.futurePoll;
  const route = TINKER_ROUTES.retrieveFuture;
  const context = { ...transport.context(route) };
  const deadline = timers.now() + poll.timeoutMs;
  const body: RetrieveFutureRequest = { request_id: requestId };
  let delay = poll.initialDelayMs;
  for (let polls = 1; ; polls += 1) {
    const reply = await transport.post(route, body, { accept: [400, 404, 408] });
    if (reply.status === 408) {
      const remaining = deadline - timers.now();
      if (remaining <= 0) {
        throw new EngineError(
          ENGINE_ERROR_CODES.futureTimeout,
          context,
          `${label}: request ${requestId} still pending after ${poll.timeoutMs} ms (${polls} polls)`,
        );
      }
      await timers.sleep(Math.min(delay, remaining));
      delay = Math.min(delay * poll.factor, poll.maxDelayMs);
      continue;
    }
    if (reply.status !== 200 || isFailedResult(reply.json)) {
      const detail = readDetail(reply);
      const what = reply.status === 404 ? 'is unknown to the server' : 'failed';
      throw new EngineError(
        ENGINE_ERROR_CODES.futureFailed,
        { ...context, status: reply.status, serverMessage: detail },
        `${label}: request ${requestId} ${what}: ${detail}`,
      );
    }
    transport.emit({ type: 'future:resolved', endpoint: config.name, requestId, polls });
    return reply.json;
  }
}

/** The tinker SDK's in-band failure form `{error, category}`. */
function isFailedResult(body: unknown): boolean {
  return isObject(body) && typeof body['error'] === 'string';
}
