// The served model's context window (docs/engines.md): configured, else read once from
// `GET /v1/models` (`max_model_len` of the served model's card), else learned from a 400
// context-overflow reply (either wording, errors.ts). Used to clamp `max_tokens` so prompt + completion fit.
import { isObject } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';
import { overflowWindowOf, readVllmError } from './errors.ts';
import type { VllmTransport } from './transport.ts';

export const MODELS_ROUTE = '/v1/models';

/** The window a context-overflow reply names, in any of vLLM's wordings (errors.ts). */
export function contextLimitOf(reply: HttpReply): number | undefined {
  return overflowWindowOf(readVllmError(reply).message);
}

/** `max_model_len` of `model`'s card (else of the base model card) in a /v1/models reply. */
export function maxModelLenOf(json: unknown, model: string): number | undefined {
  const cards = isObject(json) && Array.isArray(json['data']) ? json['data'] : [];
  const lengthOf = (card: unknown) =>
    isObject(card) &&
    Number.isSafeInteger(card['max_model_len']) &&
    Number(card['max_model_len']) > 0
      ? Number(card['max_model_len'])
      : undefined;
  const own = cards.find((c) => isObject(c) && c['id'] === model);
  const base = cards.find((c) => isObject(c) && (c['parent'] ?? null) === null);
  return lengthOf(own) ?? lengthOf(base);
}

export class ContextWindow {
  private known: number | undefined;
  private settled: boolean;
  private discovery: Promise<void> | undefined;

  constructor(
    private readonly transport: VllmTransport,
    configured: number | undefined,
  ) {
    this.known = configured;
    this.settled = configured !== undefined;
  }

  /** Settled (configured, discovered or learned): no discovery needed. */
  get isSettled(): boolean {
    return this.settled;
  }

  get current(): number | undefined {
    return this.known;
  }

  /** The window, discovering it on first use; undefined when the server does not say. */
  async get(signal?: AbortSignal): Promise<number | undefined> {
    if (!this.settled) {
      this.discovery ??= this.discover(signal).finally(() => {
        this.discovery = undefined;
      });
      await this.discovery;
    }
    return this.known;
  }

  /** A limit the server stated in an overflow reply. */
  learn(limit: number): void {
    this.known = limit;
    this.settled = true;
  }

  /** One GET on an admitted replica. A reply without the field (older servers) settles it as
   * unknown; a failed exchange leaves it for the next call (sampling proceeds unclamped). */
  private async discover(signal?: AbortSignal): Promise<void> {
    const replica = this.transport.pool.replicas.find((r) => r.healthy);
    if (replica === undefined) return;
    try {
      const reply = await this.transport.send(replica, 'GET', MODELS_ROUTE, undefined, {
        timeoutMs: this.transport.config.healthTimeoutMs,
        signal,
      });
      if (reply.status !== 200) return;
      if (!this.settled) this.known = maxModelLenOf(reply.json, this.transport.config.model);
      this.settled = true;
    } catch {
      // connection trouble is the sample request's to report
    }
  }
}
