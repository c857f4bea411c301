// Errors of the HTTP engine clients. Every one names the engine, the named endpoint, the
// server URL, the route, and what the server said, so a failed run explains itself.

export type EngineKind = 'vLLM' | 'trainer';

/** Stable codes (docs/conventions.md: coded errors). */
export const ENGINE_ERROR_CODES = {
  http: 'ANNEAL_ERR_ENGINE_HTTP',
  connection: 'ANNEAL_ERR_ENGINE_CONNECTION',
  timeout: 'ANNEAL_ERR_ENGINE_TIMEOUT',
  response: 'ANNEAL_ERR_ENGINE_BAD_RESPONSE',
  noReplica: 'ANNEAL_ERR_ENGINE_NO_HEALTHY_REPLICA',
  futureFailed: 'ANNEAL_ERR_TRAINER_FUTURE_FAILED',
  futureTimeout: 'ANNEAL_ERR_TRAINER_FUTURE_TIMEOUT',
  futureExpired: 'ANNEAL_ERR_TRAINER_FUTURE_EXPIRED',
  checkpointExists: 'ANNEAL_ERR_TRAINER_CHECKPOINT_EXISTS',
  seqConflict: 'ANNEAL_ERR_TRAINER_SEQ_ID_CONFLICT',
  validation: 'ANNEAL_ERR_TRAINER_VALIDATION',
  unsupported: 'ANNEAL_ERR_ENGINE_UNSUPPORTED',
  /** A request that cannot be sent as it is (a malformed URL, method or header value, e.g. an
   * API key with a line break): never sent, never retried. */
  invalidRequest: 'ANNEAL_ERR_ENGINE_INVALID_REQUEST',
  /** The inference server is healthy but refuses these weights (vLLM: missing path, rank above
   * --max-lora-rank, full weights on a LoRA endpoint). Never retried; the replica stays up. */
  badAdapter: 'ANNEAL_ERR_ENGINE_BAD_ADAPTER',
  /** A completion's reply names another model than the request (vLLM: the adapter it was
   * served with, vllm/reply-model.ts). Never retried: the step fails. */
  adapterMismatch: 'ANNEAL_ERR_ENGINE_ADAPTER_MISMATCH',
} as const;

export type EngineErrorCode = (typeof ENGINE_ERROR_CODES)[keyof typeof ENGINE_ERROR_CODES];

export interface EngineErrorContext {
  engine: EngineKind;
  /** The operator-registered endpoint name. */
  endpoint: string;
  /** Replica / server base URL, when one was involved. */
  url?: string;
  /** Route, e.g. `/v1/completions`. */
  route?: string;
  /** HTTP status, when the server answered. */
  status?: number;
  /** The server's own message (vLLM `message`, Tinker `detail`). */
  serverMessage?: string;
  /** The server's error type (vLLM `type`, e.g. `BadRequestError`). */
  serverType?: string;
}

export class EngineError extends Error {
  readonly code: EngineErrorCode;
  readonly context: EngineErrorContext;
  /** Whether retrying the same request may succeed (5xx, connection loss, timeout). */
  readonly retryable: boolean;
  /** Attempts made before giving up (set by `withRetry`). */
  attempts = 1;

  constructor(
    code: EngineErrorCode,
    context: EngineErrorContext,
    detail: string,
    options: { retryable?: boolean; cause?: unknown } = {},
  ) {
    super(`${describeTarget(context)}: ${detail}`, { cause: options.cause });
    this.name = 'EngineError';
    this.code = code;
    this.context = context;
    this.retryable = options.retryable ?? false;
  }

  get status(): number | undefined {
    return this.context.status;
  }

  /** Called once retries are exhausted. */
  markAttempts(attempts: number): void {
    this.attempts = attempts;
    if (attempts > 1) this.message += ` (gave up after ${attempts} attempts)`;
  }
}

function describeTarget(context: EngineErrorContext): string {
  const where = [context.url, context.route].filter(Boolean).join('');
  return `${context.engine} endpoint '${context.endpoint}'${where ? ` (${where})` : ''}`;
}

/** `HTTP 400 BadRequestError: <message>` */
export function describeHttpFailure(
  status: number,
  serverType: string | undefined,
  serverMessage: string,
): string {
  return `HTTP ${status}${serverType ? ` ${serverType}` : ''}: ${serverMessage}`;
}
