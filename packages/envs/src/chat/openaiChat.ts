// Minimal client of an OpenAI-compatible chat endpoint (POST {baseUrl}/v1/chat/completions),
// used by the rubric judge and by rubric calibration to sample responses.

export interface ChatEndpointConfig {
  /** Server root, e.g. `http://judge:8000` (the path /v1/chat/completions is appended). */
  baseUrl: string;
  model: string;
  /** Sent as a bearer token; the app reads it from its config, never this package. */
  apiKey?: string;
  /** Per-request timeout (default 60 s). */
  timeoutMs?: number;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatParams {
  n?: number;
  temperature?: number;
  maxTokens?: number;
  seed?: number;
}

export type ChatErrorCode =
  'timeout' | 'aborted' | 'network' | 'http_status' | 'bad_response' | 'unparseable';

export class ChatError extends Error {
  override readonly name = 'ChatError';
  constructor(
    readonly code: ChatErrorCode,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Error message of OpenAI (`{error:{message}}`), old vLLM (`{message}`) or plain `{error}` bodies. */
function errorMessage(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { error, message } = body as { error?: unknown; message?: unknown };
  if (typeof error === 'string') return error;
  const nested =
    typeof error === 'object' && error !== null
      ? (error as { message?: unknown }).message
      : undefined;
  if (typeof nested === 'string') return nested;
  return typeof message === 'string' ? message : undefined;
}

export class ChatClient {
  private readonly timeoutMs: number;

  constructor(
    readonly name: string,
    private readonly config: ChatEndpointConfig,
  ) {
    if (!/^https?:\/\//.test(config.baseUrl)) {
      throw new Error(`chat endpoint '${name}': baseUrl must be an http(s) URL`);
    }
    this.timeoutMs = config.timeoutMs ?? 60_000;
  }

  /** The message content of each choice, in choice order. */
  async complete(
    messages: readonly ChatMessage[],
    params: ChatParams = {},
    signal?: AbortSignal,
  ): Promise<string[]> {
    const payload = {
      model: this.config.model,
      messages,
      ...(params.n === undefined ? {} : { n: params.n }),
      ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
      ...(params.maxTokens === undefined ? {} : { max_tokens: params.maxTokens }),
      ...(params.seed === undefined ? {} : { seed: params.seed }),
    };
    const body = await this.post(payload, signal);
    const choices = (body as { choices?: unknown }).choices;
    if (!Array.isArray(choices) || choices.length === 0) {
      throw new ChatError(
        'bad_response',
        `chat '${this.name}': choices: must be a non-empty array`,
      );
    }
    return choices.map((choice: unknown, i) => {
      const content = (choice as { message?: { content?: unknown } } | null)?.message?.content;
      if (typeof content !== 'string') {
        throw new ChatError(
          'bad_response',
          `chat '${this.name}': choices[${i}].message.content: must be a string`,
        );
      }
      return content;
    });
  }

  private async post(payload: object, signal?: AbortSignal): Promise<unknown> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const url = new URL('v1/chat/completions', this.config.baseUrl.replace(/\/?$/, '/'));
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.config.apiKey) headers['authorization'] = `Bearer ${this.config.apiKey}`;
    let text: string;
    let status: number;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(payload),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      throw this.transportError(err, timeout, signal);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (status < 200 || status >= 300) {
      const detail = errorMessage(body) ?? text.slice(0, 200);
      throw new ChatError('http_status', `chat '${this.name}': HTTP ${status}: ${detail}`, status);
    }
    if (body === undefined) {
      throw new ChatError(
        'bad_response',
        `chat '${this.name}': response is not JSON: ${text.slice(0, 120)}`,
      );
    }
    return body;
  }

  private transportError(err: unknown, timeout: AbortSignal, signal?: AbortSignal): ChatError {
    if (signal?.aborted) return new ChatError('aborted', `chat '${this.name}': aborted`);
    if (timeout.aborted)
      return new ChatError(
        'timeout',
        `chat '${this.name}': no response within ${this.timeoutMs} ms`,
      );
    const cause = err instanceof Error ? (err.cause ?? err) : err;
    return new ChatError(
      'network',
      `chat '${this.name}': ${cause instanceof Error ? cause.message : String(cause)}`,
    );
  }
}
