// HTTP to the replicas of one vLLM endpoint: in-flight accounting, the concurrency limit,
// least-in-flight routing, retries with backoff + jitter, dropping replicas that fail.
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import { ConcurrencyLimiter } from '../http/limiter.ts';
import { sendJson } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';
import { withRetry } from '../http/retry.ts';
import type { Rng, Timers } from '../http/timing.ts';
import type { ResolvedVllmConfig } from './config.ts';
import { vllmHttpError } from './errors.ts';
import { ReplicaPool } from './replicas.ts';
import type { Replica } from './replicas.ts';

/** Typed events for metrics and logs (`noun:verb`). */
export type VllmEvent =
  | { type: 'request:retry'; endpoint: string; attempt: number; delayMs: number; error: string }
  | { type: 'replica:down'; endpoint: string; replica: string; reason: string }
  | { type: 'replica:up'; endpoint: string; replica: string }
  | {
      type: 'adapter:dropped';
      endpoint: string;
      replica: string;
      adapter: string;
      path: string;
      reason: string;
    }
  /** vLLM main evicted a released adapter and could not read it again to remove it: its name
   * stays listed on that replica (adapter-calls.ts). */
  | { type: 'adapter:kept'; endpoint: string; replica: string; adapter: string; path: string }
  | { type: 'rollout:context_overflow'; endpoint: string; promptTokens: number };

export interface RouteOptions<T> {
  signal?: AbortSignal;
  timeoutMs: number;
  /** Turn a non-2xx reply into a result instead of an error (e.g. context overflow). */
  onErrorReply?: (reply: HttpReply) => T | undefined;
  /** Only replicas this accepts are used (those holding the request's adapter version). */
  eligible?: (replica: Replica) => boolean;
}

/** Reads a non-2xx reply of a `direct` call: throws the error to report (retried when
 * retryable), asks for the request to be sent again at once, or ends the call as settled. */
export type DirectReplyHandler = (reply: HttpReply) => Promise<'send-again' | 'done'>;

export class VllmTransport {
  readonly pool: ReplicaPool;
  readonly limiter: ConcurrencyLimiter;

  constructor(
    readonly config: ResolvedVllmConfig,
    private readonly timers: Timers,
    private readonly rng: Rng,
    private readonly emit: (event: VllmEvent) => void,
    /** Runs a health check (re-admitting replicas) when none is admitted. */
    private readonly recover: () => Promise<void>,
  ) {
    this.pool = new ReplicaPool(config.replicas, config.failuresBeforeDrop);
    this.limiter = new ConcurrencyLimiter(config.maxInFlight);
  }

  /** One request, routed to the best admitted replica, retried on 5xx/connection loss. */
  async routed<T>(
    route: string,
    body: unknown,
    options: RouteOptions<T>,
    accept: (reply: HttpReply, replica: Replica) => T | Promise<T>,
  ): Promise<T> {
    const failedOn = new Set<string>();
    return withRetry(
      () =>
        this.limiter.run(async () => {
          const replica = await this.choose(route, failedOn, options.eligible);
          failedOn.add(replica.url);
          const reply = await this.send(replica, 'POST', route, body, options);
          if (reply.status >= 200 && reply.status < 300) {
            this.pool.recordSuccess(replica);
            try {
              return await accept(reply, replica);
            } finally {
              reply.release?.(); // what `accept` keeps is its own copy
            }
          }
          const handled = options.onErrorReply?.(reply);
          if (handled !== undefined) return handled;
          throw this.failed(replica, vllmHttpError(this.context(replica.url, route), reply));
        }, options.signal),
      this.retryOptions(options.signal),
    );
  }

  /** A call to one specific replica (weight sync), retried on that replica. */
  async direct(
    replica: Replica,
    route: string,
    body: unknown,
    timeoutMs: number,
    onErrorReply?: DirectReplyHandler,
  ): Promise<void> {
    await withRetry(async () => {
      for (;;) {
        const reply = await this.send(replica, 'POST', route, body, { timeoutMs });
        if (reply.status >= 200 && reply.status < 300) return;
        if (onErrorReply === undefined) {
          throw vllmHttpError(this.context(replica.url, route), reply);
        }
        if ((await onErrorReply(reply)) === 'done') return;
      }
    }, this.retryOptions());
  }

  /** Raw exchange; connection loss / timeouts count against the replica. */
  async send(
    replica: Replica,
    method: 'GET' | 'POST',
    route: string,
    body: unknown,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<HttpReply> {
    const headers: Record<string, string> = {};
    if (this.config.apiKey) headers['authorization'] = `Bearer ${this.config.apiKey}`;
    replica.inFlight += 1;
    try {
      return await sendJson(this.context(replica.url, route), {
        method,
        body,
        headers,
        timeoutMs: options.timeoutMs,
        signal: options.signal,
        timers: this.timers,
      });
    } catch (error) {
      if (error instanceof EngineError && !(await this.slowButAlive(replica, route, error))) {
        this.failed(replica, error);
      }
      throw error;
    } finally {
      replica.inFlight -= 1;
    }
  }

  /** A request that ran past its timeout on a replica whose `/health` still answers 200 is a
   * slow request (a long generation, a deep queue), not a dead replica: it stays in rotation. */
  private async slowButAlive(
    replica: Replica,
    route: string,
    error: EngineError,
  ): Promise<boolean> {
    if (error.code !== ENGINE_ERROR_CODES.timeout || route === '/health') return false;
    const headers: Record<string, string> = {};
    if (this.config.apiKey) headers['authorization'] = `Bearer ${this.config.apiKey}`;
    try {
      const reply = await sendJson(this.context(replica.url, '/health'), {
        method: 'GET',
        headers,
        timeoutMs: this.config.healthTimeoutMs,
        timers: this.timers,
      });
      return reply.status === 200;
    } catch {
      return false;
    }
  }

  context(
    url: string,
    route: string,
  ): { engine: 'vLLM'; endpoint: string; url: string; route: string } {
    return { engine: 'vLLM', endpoint: this.config.name, url, route };
  }

  dropReplica(replica: Replica, reason: string): void {
    if (this.pool.drop(replica)) {
      this.emit({ type: 'replica:down', endpoint: this.config.name, replica: replica.url, reason });
    }
  }

  private failed(replica: Replica, error: EngineError): EngineError {
    if (this.pool.recordFailure(replica, error)) {
      const reason = error.message;
      this.emit({ type: 'replica:down', endpoint: this.config.name, replica: replica.url, reason });
    }
    return error;
  }

  private async choose(
    route: string,
    failedOn: ReadonlySet<string>,
    eligible: ((replica: Replica) => boolean) | undefined,
  ): Promise<Replica> {
    let replica = this.pool.pick(failedOn, eligible);
    if (replica === undefined) {
      await this.recover();
      replica = this.pool.pick(failedOn, eligible);
    }
    if (replica === undefined) {
      const urls = this.config.replicas.join(', ');
      throw new EngineError(
        ENGINE_ERROR_CODES.noReplica,
        { engine: 'vLLM', endpoint: this.config.name, route },
        `no healthy replica (all of ${urls} failed their last request or health check)`,
        { retryable: true },
      );
    }
    return replica;
  }

  private retryOptions(signal?: AbortSignal): Parameters<typeof withRetry>[1] {
    return {
      policy: this.config.retry,
      sleep: this.timers.sleep,
      rng: this.rng,
      signal,
      onRetry: ({ attempt, delayMs, error }) =>
        this.emit({
          type: 'request:retry',
          endpoint: this.config.name,
          attempt,
          delayMs,
          error: error.message,
        }),
    };
  }
}
