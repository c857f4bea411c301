// Hash routes, so the control plane serves one page: #/runs?…, #/runs/{id},
// #/runs/{id}/rollouts?…, #/runs/{id}/items?…, #/compare?run=…&run=…, #/sweeps/{id}. Only ids and
// filters go in the hash, never the token.
export type Route =
  | { page: 'runs'; query: URLSearchParams }
  | { page: 'run'; id: string }
  | { page: 'rollouts'; id: string; query: URLSearchParams }
  | { page: 'items'; id: string; query: URLSearchParams }
  | { page: 'compare'; runs: string[] }
  | { page: 'sweep'; id: string };

/** A part of the link that is not valid percent-encoding (a `%` not followed by two hex digits
 * of UTF-8): named, so the page can say which link is broken instead of staying blank. */
function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new Error(`this link is malformed: '${part}' is not valid percent-encoding`);
  }
}

/** Throws (a message naming the broken part) for a malformed link. */
export function parseRoute(hash: string): Route {
  const [path = '', search = ''] = hash.replace(/^#/, '').split('?', 2);
  const query = new URLSearchParams(search);
  const parts = path.split('/').filter(Boolean).map(decodePart);
  if (parts[0] === 'runs' && parts[1] !== undefined) {
    if (parts[2] === 'rollouts') return { page: 'rollouts', id: parts[1], query };
    if (parts[2] === 'items') return { page: 'items', id: parts[1], query };
    return { page: 'run', id: parts[1] };
  }
  if (parts[0] === 'compare') return { page: 'compare', runs: query.getAll('run') };
  if (parts[0] === 'sweeps' && parts[1] !== undefined) return { page: 'sweep', id: parts[1] };
  return { page: 'runs', query };
}

export const runHref = (id: string) => `#/runs/${encodeURIComponent(id)}`;
export const sweepHref = (id: string) => `#/sweeps/${encodeURIComponent(id)}`;
export const compareHref = (runs: readonly string[]) => hrefWith('#/compare', { run: runs });

export function hrefWith(
  base: string,
  query: Record<string, string | readonly string[] | undefined>,
): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === '') continue;
    if (typeof value === 'string') params.set(key, value);
    else for (const v of value) params.append(key, v);
  }
  const text = params.toString();
  return text ? `${base}?${text}` : base;
}
