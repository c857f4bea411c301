// One JSON HTTP exchange with a per-request timeout. Transport failures become coded
// EngineErrors (connection -> retryable, timeout -> retryable, a request that cannot be sent as
// it is -> invalid request, not retried); a caller's abort propagates
// unchanged (never retried). Status handling is the caller's: every reply is returned.
//
// The timeout given is the one in force end to end: undici (Node's fetch) otherwise gives up on
// a reply's headers, and on a pause in its body, after 300 s of its own (`headersTimeout` /
// `bodyTimeout`, undici lib/dispatcher/client.js), whatever the caller's signal says; vLLM's
// non-streaming completions send no byte before generation ends. Each request goes through an
// undici Agent whose header and body timeouts are at least the request's own (`dispatcherFor`,
// docs/engines.md "Conformance").
//
// Plain-HTTP origins (the engines as deployed: in-cluster `http://`) go through the client in
// http1.ts, which reads a reply of announced length from the socket straight into a buffer of
// the process's pool (byte-pool.ts); `https:` origins through undici's `request` API, each body
// chunk copied into such a buffer as it arrives. Whoever has read what it needs from a 2xx reply
// gives the buffer back with `release()`.
import { Agent } from 'undici';
import type { Dispatcher } from 'undici';
import { processBytePool } from './byte-pool.ts';
import { ENGINE_ERROR_CODES, EngineError } from './errors.ts';
import { Http1Agent } from './http1.ts';
import { JsonText } from './json-text.ts';
import type { EngineErrorContext } from './errors.ts';
import { linkSignals } from './timing.ts';
import type { Timers } from './timing.ts';

export interface HttpReply {
  status: number;
  /** Parsed JSON body, or undefined when the body is empty or not JSON. */
  json: unknown;
  text: string;
  /** The raw body, for readers that extract fields without parsing it all (vLLM completions,
   * docs/engines.md "vLLM"). `text` and `json` are decoded from it on first use. */
  bytes?: Uint8Array;
  /** Gives the body's buffer back for reuse (byte-pool.ts): afterwards `bytes`, and `text` and
   * `json` unless already read, throw. Call it once what was read from the body is copied out
   * (the readers' typed arrays are their own copies); never calling it costs only the reuse. */
  release?(): void;
}

export interface SendOptions {
  method: 'GET' | 'POST' | 'DELETE';
  /** Serialised with JSON.stringify, or sent as it is when already JSON (JsonText). */
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  timers: Timers;
}

/** undici's codes for its own header/body timeouts (undici lib/core/errors.js). */
const UNDICI_TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** The process's plain-HTTP connections, kept per origin for reuse. */
const plainHttp = new Http1Agent(processBytePool);

const dispatchers = new Map<number, Agent>();
/** Dispatcher timeouts are whole minutes (never below the request's own timeout, which its abort
 * signal enforces to the millisecond): callers that pass a shrinking remainder (trainer futures)
 * share a handful of Agents and their connection pools instead of one per value. */
const DISPATCHER_STEP_MS = 60_000;

/** The shared undici Agent for requests with this timeout: its `headersTimeout` and
 * `bodyTimeout` are `timeoutMs` rounded up to a whole minute (equal for the configured
 * defaults, e.g. vLLM's `requestTimeoutMs` 600 s), so undici never gives up first. */
export function dispatcherFor(timeoutMs: number): Agent {
  const limit = Math.max(1, Math.ceil(timeoutMs / DISPATCHER_STEP_MS)) * DISPATCHER_STEP_MS;
  let agent = dispatchers.get(limit);
  if (agent === undefined) {
    agent = new Agent({ headersTimeout: limit, bodyTimeout: limit });
    dispatchers.set(limit, agent);
  }
  return agent;
}

export async function sendJson(
  context: EngineErrorContext & { url: string; route: string },
  options: SendOptions,
): Promise<HttpReply> {
  const timeout = options.timers.timeoutSignal(options.timeoutMs);
  const linked = linkSignals(timeout, options.signal);
  const signal = linked.signal;
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  try {
    const url = new URL(context.url + context.route);
    if (url.protocol === 'http:') {
      const reply = await plainHttp.exchange({
        url,
        method: options.method,
        headers,
        body: bodyText(options.body),
        signal,
      });
      return new LazyReply(reply.status, reply.bytes, reply.pooled);
    }
    const response = await dispatcherFor(options.timeoutMs).request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: options.method,
      headers,
      body: bodyText(options.body),
      signal,
    });
    const body = await readBody(response.body, response.headers['content-length']);
    return new LazyReply(response.statusCode, body.bytes, body.pooled);
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    if (unsendable(error)) {
      throw new EngineError(
        ENGINE_ERROR_CODES.invalidRequest,
        context,
        `request not sent: ${transportReason(error)}`,
        { retryable: false, cause: error },
      );
    }
    if (timeout.aborted || isUndiciTimeout(error)) {
      throw new EngineError(
        ENGINE_ERROR_CODES.timeout,
        context,
        `no reply within ${options.timeoutMs} ms`,
        { retryable: true, cause: error },
      );
    }
    throw new EngineError(
      ENGINE_ERROR_CODES.connection,
      context,
      `connection failed: ${transportReason(error)}`,
      { retryable: true, cause: error },
    );
  } finally {
    linked.dispose();
  }
}

function bodyText(body: unknown): string | Uint8Array | null {
  if (body === undefined) return null;
  return body instanceof JsonText ? body.body : JSON.stringify(body);
}

/** The whole body, each chunk copied once as it arrives: into one pooled buffer of at least the
 * announced length, or (no or a wrong length) gathered and joined at the end. `pooled` is the
 * pool's buffer the bytes are a view of, if they are. */
async function readBody(
  body: Dispatcher.ResponseData['body'],
  contentLength: string | string[] | undefined,
): Promise<{ bytes: Uint8Array; pooled?: Buffer }> {
  const announced = typeof contentLength === 'string' ? Number(contentLength) : NaN;
  if (!Number.isSafeInteger(announced) || announced < 0) {
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    return { bytes: Buffer.concat(chunks) };
  }
  const pooled = processBytePool.take(announced);
  let bytes = pooled;
  let length = 0;
  for await (const chunk of body) {
    const piece = chunk as Buffer;
    if (length + piece.length > bytes.length) {
      bytes = Buffer.concat([bytes.subarray(0, length), piece]);
      length = bytes.length;
      continue;
    }
    piece.copy(bytes, length);
    length += piece.length;
  }
  if (bytes !== pooled) {
    processBytePool.give(pooled); // longer than announced: the bytes moved to their own buffer
    return { bytes: bytes.subarray(0, length) };
  }
  return { bytes: bytes.subarray(0, length), pooled };
}

const utf8 = new TextDecoder();

/** A reply whose body is decoded (UTF-8, like `response.text()`) and parsed only when read. */
class LazyReply implements HttpReply {
  private decoded: string | undefined;
  private parsed: { value: unknown } | undefined;
  private released = false;

  constructor(
    readonly status: number,
    private readonly body: Uint8Array,
    private readonly pooled: Buffer | undefined,
  ) {}

  get bytes(): Uint8Array {
    if (this.released) throw new Error('HTTP reply body read after release()');
    return this.body;
  }

  get text(): string {
    this.decoded ??= utf8.decode(this.bytes);
    return this.decoded;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    if (this.pooled !== undefined) processBytePool.give(this.pooled);
  }

  get json(): unknown {
    this.parsed ??= { value: parseJson(this.text) };
    return this.parsed.value;
  }
}

function parseJson(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isUndiciTimeout(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const codeOf = (e: unknown) => (e as { code?: unknown } | undefined)?.code;
  return [codeOf(error), codeOf(error.cause)].some(
    (code) => typeof code === 'string' && UNDICI_TIMEOUT_CODES.has(code),
  );
}

/** undici's socket errors carry their code (`ECONNREFUSED`, `UND_ERR_SOCKET`) on the error or,
 * wrapped, on its cause. */
/** An error of building the request rather than of sending it — URL's and Http1Agent's
 * TypeError (a malformed URL, method or header), undici's InvalidArgumentError — which every
 * retry would raise again. */
function unsendable(error: unknown): boolean {
  return (
    error instanceof TypeError ||
    (error as { code?: unknown } | null)?.code === 'UND_ERR_INVALID_ARG'
  );
}

function transportReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const own = (error as { code?: unknown }).code;
  if (typeof own === 'string' && !error.message.includes(own)) return `${error.message}: ${own}`;
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  const causeMessage = typeof cause?.message === 'string' ? cause.message : undefined;
  return [error.message, code ?? causeMessage].filter(Boolean).join(': ');
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
