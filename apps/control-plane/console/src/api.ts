// Calls to the control plane's /v1 API with the session's bearer token. Errors are the API's
// problem+json documents, kept as ApiError (status, ANNEAL_ERR_* code, detail).
import { currentToken, signOut } from './session.ts';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
  ) {
    super(detail);
    this.name = 'ApiError';
  }
}

/** Fired when the API refuses the token: the app goes back to the sign-in form. */
export const SIGNED_OUT = 'anneal:signed-out';

export function authHeaders(extra: Record<string, string> = {}): Record<string, string> {
  const token = currentToken();
  return { ...extra, ...(token && { authorization: `Bearer ${token}` }) };
}

/** Throws the response's problem as an ApiError unless it is a 2xx. */
export async function checkResponse(res: Response): Promise<Response> {
  if (res.ok) return res;
  let code = 'ANNEAL_ERR_HTTP';
  let detail = `${res.status} ${res.statusText}`;
  if ((res.headers.get('content-type') ?? '').includes('json')) {
    const problem = (await res.json().catch(() => ({}))) as { code?: string; detail?: string };
    code = problem.code ?? code;
    detail = problem.detail ?? detail;
  }
  if (res.status === 401) {
    signOut();
    window.dispatchEvent(new CustomEvent(SIGNED_OUT, { detail }));
  }
  throw new ApiError(res.status, code, detail);
}

export async function apiGet(path: string, signal?: AbortSignal): Promise<Response> {
  const res = await fetch(path, {
    headers: authHeaders({ accept: 'application/json' }),
    ...(signal && { signal }),
  });
  return checkResponse(res);
}

/** A POST with a JSON body (run actions: pause, resume, cancel). */
export async function apiPost<T>(path: string, body: unknown): Promise<T> {
  const res = await fetch(path, {
    method: 'POST',
    headers: authHeaders({ accept: 'application/json', 'content-type': 'application/json' }),
    body: JSON.stringify(body),
  });
  return (await (await checkResponse(res)).json()) as T;
}

export async function apiJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  return (await (await apiGet(path, signal)).json()) as T;
}

/** A path with a query string from the defined entries of `query` (arrays repeat the key). */
export function withQuery(
  path: string,
  query: Record<string, string | number | readonly string[] | undefined>,
): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === '') continue;
    if (Array.isArray(value)) for (const v of value) params.append(key, v);
    else params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export const runPath = (id: string) => `/v1/runs/${encodeURIComponent(id)}`;
