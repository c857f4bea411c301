// HTTP to a Tinker-compatible server: JSON only, `X-API-Key`, bounded retries with backoff +
// jitter on 5xx/429/connection loss/timeouts. A retried POST resends the identical body, so
// its `seq_id` is unchanged and the server answers with the original request id. Future
// polling (futures.ts) makes single attempts and retries until its own deadline instead.
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import { sendJson } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';
import { withRetry } from '../http/retry.ts';
import { linkSignals } from '../http/timing.ts';
import type { Rng, Timers } from '../http/timing.ts';
import type { ResolvedTinkerConnection } from './config.ts';
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
  | { type: 'future:resolved'; endpoint: string; requestId: string; polls: number }
  | {
      type: 'future:pending';
      endpoint: string;
      requestId: string;
      polls: number;
      /** Hosted Tinker's `queue_state` (`active`, `paused_capacity`, …) when it sent one. */
      queueState?: string;
    }
  | {
      type: 'future:poll_retry';
      endpoint: string;
      requestId: string;
      delayMs: number;
      error: string;
    };

export interface PostOptions {
  /** Statuses handed back to the caller instead of thrown (e.g. 408 from retrieve_future). */
  accept?: readonly number[];
  /** For the 409 message. */
  seqId?: number;
  signal?: AbortSignal;
  /** Overrides the endpoint's retry attempts (1 = the caller retries, e.g. future polling). */
  attempts?: number;
  /** Overrides the endpoint's per-call timeout (retrieve_future outlasts the server's hold). */
  timeoutMs?: number;
}

export class TinkerTransport {
  /** Errors answered to a resent request whose previous attempt's reply was lost (connection
   * dropped or timed out): the server may have run that attempt. */
  private readonly afterLostReply = new WeakSet<object>();
  private readonly lifetime = new AbortController();

  constructor(
    readonly config: ResolvedTinkerConnection,
    readonly timers: Timers,
    readonly rng: Rng,
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

  /** Aborted by `close()`: what waits on it (a request, a retry's backoff, a future's poll)
   * rejects at once instead of retrying against a server that is going away. */
  get signal(): AbortSignal {
    return this.lifetime.signal;
  }

  /** Ends every exchange in flight and refuses new ones. */
  close(): void {
    this.lifetime.abort(new Error(`trainer endpoint '${this.config.name}' is closed`));
  }

  async post(route: string, body: unknown, options: PostOptions = {}): Promise<HttpReply> {
    return this.exchange('POST', route, body, options);
  }

  async get(route: string, options: PostOptions = {}): Promise<HttpReply> {
    return this.exchange('GET', route, undefined, options);
  }

  async delete(route: string, options: PostOptions = {}): Promise<HttpReply> {
    return this.exchange('DELETE', route, undefined, options);
  }

  /** Whether `error` answered a resend of a request whose earlier reply was lost, so what it
   * conflicts with may be that earlier attempt itself (see TinkerTrainerModel's saves). */
  answeredResendAfterLostReply(error: unknown): boolean {
    return typeof error === 'object' && error !== null && this.afterLostReply.has(error);
  }

  /** `X-API-Key` when configured (never sent to another origin, e.g. a signed download URL). */
  authHeaders(): Record<string, string> {
    return this.config.apiKey ? { 'x-api-key': this.config.apiKey } : {};
  }

  private async exchange(
    method: 'GET' | 'POST' | 'DELETE',
    route: string,
    body: unknown,
    options: PostOptions,
  ): Promise<HttpReply> {
    const linked = linkSignals(options.signal, this.lifetime.signal);
    try {
      return await this.attempts(method, route, body, options, linked.signal);
    } finally {
      linked.dispose();
    }
  }

  private attempts(
    method: 'GET' | 'POST' | 'DELETE',
    route: string,
    body: unknown,
    options: PostOptions,
    signal: AbortSignal,
  ): Promise<HttpReply> {
    const context = this.context(route);
    const headers = this.authHeaders();
    const policy =
      options.attempts === undefined
        ? this.config.retry
        : { ...this.config.retry, attempts: options.attempts };
    let lostReply = false;
    return withRetry(
      async () => {
        const reply = await sendJson(context, {
          method,
          body,
          headers,
          timeoutMs: options.timeoutMs ?? this.config.requestTimeoutMs,
          signal,
          timers: this.timers,
        });
        const ok = reply.status >= 200 && reply.status < 300;
        if (ok || options.accept?.includes(reply.status)) return reply;
        const error = trainerHttpError(context, reply, options.seqId);
        if (lostReply) this.afterLostReply.add(error);
        throw error;
      },
      {
        policy,
        sleep: this.timers.sleep,
        rng: this.rng,
        signal,
        onRetry: ({ attempt, delayMs, error }) => {
          lostReply =
            error instanceof EngineError &&
            (error.code === ENGINE_ERROR_CODES.connection ||
              error.code === ENGINE_ERROR_CODES.timeout);
          this.emit({
            type: 'request:retry',
            endpoint: this.config.name,
            route,
            attempt,
            delayMs,
            error: error.message,
          });
        },
      },
    );
  }
}
