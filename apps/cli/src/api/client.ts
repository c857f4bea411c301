// A thin REST client for the control plane (node:http for requests, see ./http.ts; fetch for
// SSE streams). ANNEAL_URL and ANNEAL_TOKEN come from the environment the command parsed;
// problem+json errors become ApiError with code and issues.
import { type HttpReply, send } from './http.ts';
import { terminalSafe } from '../ops/terminal-text.ts';
export interface Problem {
  code: string;
  title: string;
  status: number;
  detail?: string;
  errors?: Array<{ path: string; message: string; line?: number }>;
}

export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(`${problem.title} (${problem.code})${problem.detail ? `: ${problem.detail}` : ''}`);
    this.name = 'ApiError';
  }
}

export interface ApiClientOptions {
  url: string;
  token?: string;
}

export interface ApiResponse<T> {
  status: number;
  body: T;
}

/** The ApiError of a 4xx/5xx answer (problem+json when the server sent one). */
function problemError(response: HttpReply): ApiError {
  let problem: Partial<Problem> | undefined;
  try {
    problem = response.text ? (JSON.parse(response.text) as Partial<Problem>) : undefined;
  } catch {
    problem = undefined;
  }
  return new ApiError({
    code: problem?.code ?? `HTTP_${response.status}`,
    title: problem?.title ?? response.statusText,
    status: response.status,
    ...(problem?.detail !== undefined && { detail: problem.detail }),
    ...(problem?.errors !== undefined && { errors: problem.errors }),
  });
}

export class ApiClient {
  constructor(private readonly options: ApiClientOptions) {}

  get url(): string {
    return this.options.url;
  }

  async request<T>(
    method: string,
    path: string,
    init: { body?: string; contentType?: string; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { accept: 'application/json', ...init.headers };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    if (init.body !== undefined) headers['content-type'] = init.contentType ?? 'application/json';
    let response: HttpReply;
    try {
      response = await send(new URL(path, this.options.url), {
        method,
        headers,
        ...(init.body !== undefined && { body: init.body }),
      });
    } catch (error) {
      const cause = (error as { code?: string }).code ?? (error as Error).message;
      throw new Error(`cannot reach the control plane at ${this.options.url} (${cause})`, {
        cause: error,
      });
    }
    const { text } = response;
    if (response.status >= 400) throw problemError(response);
    const body = text ? (JSON.parse(text) as unknown) : undefined;
    return { status: response.status, body: body as T };
  }

  /** A GET whose answer is not JSON (e.g. the eval chart, image/svg+xml); errors as `request`. */
  async getText(path: string, accept: string): Promise<string> {
    const headers: Record<string, string> = { accept };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    let response: HttpReply;
    try {
      response = await send(new URL(path, this.options.url), { method: 'GET', headers });
    } catch (error) {
      const cause = (error as { code?: string }).code ?? (error as Error).message;
      throw new Error(`cannot reach the control plane at ${this.options.url} (${cause})`, {
        cause: error,
      });
    }
    if (response.status >= 400) throw problemError(response);
    return response.text;
  }

  /**
   * Opens a streaming GET (Server-Sent Events). Resolves with the response once the status is
   * 2xx; a problem+json answer throws ApiError like `request`, an unreachable server throws
   * NetworkError. The caller reads `response.body` and aborts through `signal`.
   */
  async stream(
    path: string,
    init: { headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { accept: 'text/event-stream', ...init.headers };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    let response: Response;
    try {
      response = await fetch(new URL(path, this.options.url), {
        headers,
        ...(init.signal && { signal: init.signal }),
      });
    } catch (error) {
      const cause =
        (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
      throw new NetworkError(`cannot reach the control plane at ${this.options.url} (${cause})`, {
        cause: error,
      });
    }
    if (response.status >= 400) {
      const text = await response.text().catch(() => '');
      let problem: Partial<Problem> | undefined;
      try {
        problem = text ? (JSON.parse(text) as Partial<Problem>) : undefined;
      } catch {
        problem = undefined;
      }
      throw new ApiError({
        code: problem?.code ?? `HTTP_${response.status}`,
        title: problem?.title ?? response.statusText,
        status: response.status,
        ...(problem?.detail !== undefined && { detail: problem.detail }),
        ...(problem?.errors !== undefined && { errors: problem.errors }),
      });
    }
    return response;
  }
}

/** The control plane could not be reached (connection refused, reset, DNS). */
export class NetworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NetworkError';
  }
}

export function clientFromEnv(env: Readonly<Record<string, string | undefined>>): ApiClient {
  return new ApiClient({
    url: env.ANNEAL_URL || 'http://127.0.0.1:8080',
    ...(env.ANNEAL_TOKEN && { token: env.ANNEAL_TOKEN }),
  });
}

/** One line per issue: `error: Run spec is invalid (ANNEAL_ERR_…)` then `  /path (line n): msg`. */
export function formatApiError(error: unknown): string {
  if (error instanceof ApiError) {
    const { problem } = error;
    const lines = [`error: ${problem.title} (${problem.code})`];
    if (problem.errors && problem.errors.length > 0) {
      for (const issue of problem.errors) {
        const line = issue.line === undefined ? '' : ` (line ${issue.line})`;
        lines.push(`  ${issue.path || '(document)'}${line}: ${issue.message}`);
      }
    } else if (problem.detail) {
      lines.push(`  ${problem.detail}`);
    }
    // Every field is the server's text: one line each, escaped (docs/security.md).
    return lines.map(terminalSafe).join('\n');
  }
  return terminalSafe(`error: ${(error as Error).message}`);
}
