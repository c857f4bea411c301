// HTTP to a Tinker-compatible server: JSON only, `X-API-Key`, bounded retries with backoff +
// jitter on 5xx/429/connection loss/timeouts. A retried POST resends the identical body, so
// its `seq_id` is unchanged and the server answers with the original request id.
import { sendJson } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';
import { withRetry } from '../http/retry.ts';
import type { Rng, Timers } from '../http/timing.ts';
import type { ResolvedTinkerConfig } from './config.ts';
import { trainerHttpError } from './errors.ts';
import { TINKER_API_PREFIX } from './wire.ts';

/** Typed events for metrics and logs (`noun:verb`). */
export type TinkerEvent =
  | {
      type: 'request:retry';
      endpoint: string;
      route: string;
      attempt: number;
      delayMs: number;
      error: string;
    }
  | { type: 'session:heartbeat_failed'; endpoint: string; sessionId: string; error: string }
  | { type: 'future:resolved'; endpoint: string; requestId: string; polls: number };

export interface PostOptions {
  /** Statuses handed back to the caller instead of thrown (e.g. 408 from retrieve_future). */
  accept?: readonly number[];
  /** For the 409 message. */
  seqId?: number;
  signal?: AbortSignal;
}

export class TinkerTransport {
  constructor(
    readonly config: ResolvedTinkerConfig,
    readonly timers: Timers,
    private readonly rng: Rng,
    readonly emit: (event: TinkerEvent) => void,
  ) {}

  context(route: string): { engine: 'trainer'; endpoint: string; url: string; route: string } {
    return {
      engine: 'trainer',
      endpoint: this.config.name,
      url: this.config.baseUrl,
      route: `${TINKER_API_PREFIX}/${route}`,
    };
  }

  async post(route: string, body: unknown, options: PostOptions = {}): Promise<HttpReply> {
    return this.exchange('POST', route, body, options);
  }

  async get(route: string, options: PostOptions = {}): Promise<HttpReply> {
    return this.exchange('GET', route, undefined, options);
  }

  private exchange(
    method: 'GET' | 'POST',
    route: string,
    body: unknown,
    options: PostOptions,
  ): Promise<HttpReply> {
    const context = this.context(route);
    const headers: Record<string, string> = {};
    if (this.config.apiKey) headers['x-api-key'] = this.config.apiKey;
    return withRetry(
      async () => {
        const reply = await sendJson(context, {
          method,
          body,
          headers,
          timeoutMs: this.config.requestTimeoutMs,
          signal: options.signal,
          timers: this.timers,
        });
        const ok = reply.status >= 200 && reply.status < 300;
        if (ok || options.accept?.includes(reply.status)) return reply;
        throw trainerHttpError(context, reply, options.seqId);
      },
      {
        policy: this.config.retry,
        sleep: this.timers.sleep,
        rng: this.rng,
        signal: options.signal,
        onRetry: ({ attempt, delayMs, error }) =>
          this.emit({
            type: 'request:retry',
            endpoint: this.config.name,
            route,
            attempt,
            delayMs,
            error: error.message,
          }),
      },
    );
  }
}
