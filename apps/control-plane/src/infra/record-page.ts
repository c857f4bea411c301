// Keyset paging over records read from a run's files (rollouts, eval items): sort by one numeric
// key, ties broken by a unique string in natural order, and an opaque cursor naming the last
// record sent. A cursor names a position, not an offset, so records a running run adds meanwhile
// never shift a page: each record is sent once, in order, and new ones appear in their place
// ahead of the cursor only if they sort after it.
import { createHash } from 'node:crypto';
import { AnnealError } from '../errors.ts';

export type SortOrder = 'asc' | 'desc';

/** A record's place in the order: `key` (null sorts last in either order), then `tie`. */
export interface Position {
  key: number | null;
  tie: string;
}

export interface PageOptions<T> {
  position: (record: T) => Position;
  order: SortOrder;
  limit: number;
  /** Records after this position only (from a decoded cursor). */
  after?: Position;
}

export interface Page<T> {
  records: T[];
  /** Position of the last record sent, when more follow. */
  next: Position | null;
}

/** < 0 when `a` comes before `b` in `order`. */
export function comparePositions(a: Position, b: Position, order: SortOrder): number {
  if (a.key === null || b.key === null) {
    if (a.key !== b.key) return a.key === null ? 1 : -1;
  } else if (a.key !== b.key) {
    return order === 'asc' ? a.key - b.key : b.key - a.key;
  }
  const tie = a.tie < b.tie ? -1 : a.tie > b.tie ? 1 : 0;
  return order === 'asc' ? tie : -tie;
}

/** The first `count` of `items` in `compare` order, sorted: one pass keeping the best `count`
 * (binary insertion), so a page of a large listing does not sort all of it. */
export function firstInOrder<T>(
  items: Iterable<T>,
  count: number,
  compare: (a: T, b: T) => number,
): T[] {
  const best: T[] = [];
  for (const item of items) {
    if (best.length === count && compare(item, best[count - 1] as T) >= 0) continue;
    let lo = 0;
    let hi = best.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compare(best[mid] as T, item) <= 0) lo = mid + 1;
      else hi = mid;
    }
    best.splice(lo, 0, item);
    if (best.length > count) best.pop();
  }
  return best;
}

export function pageRecords<T>(records: readonly T[], options: PageOptions<T>): Page<T> {
  const { order, after } = options;
  const placed = records.map((record) => ({ record, at: options.position(record) }));
  const rest = after ? placed.filter((p) => comparePositions(p.at, after, order) > 0) : placed;
  // one more than a page: whether another follows
  const first = firstInOrder(rest, options.limit + 1, (a, b) =>
    comparePositions(a.at, b.at, order),
  );
  const page = first.slice(0, options.limit);
  const last = page.at(-1);
  return {
    records: page.map((p) => p.record),
    next: first.length > page.length && last ? last.at : null,
  };
}

/** A short digest of the parameters that define a listing (filters, sort, order): a cursor is
 * only valid with the listing it came from. */
export function listingDigest(parameters: Record<string, unknown>): string {
  const canonical = JSON.stringify(
    Object.keys(parameters)
      .filter((k) => parameters[k] !== undefined)
      .sort()
      .map((k) => [k, parameters[k]]),
  );
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 12);
}

interface CursorBody {
  k: number | null;
  t: string;
  q: string;
}

export function encodeCursor(position: Position, digest: string): string {
  const body: CursorBody = { k: position.key, t: position.tie, q: digest };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

const badCursor = (message: string) =>
  new AnnealError('ANNEAL_ERR_VALIDATION', `/query/cursor: ${message}`, [
    { path: '/query/cursor', message },
  ]);

/** The position a cursor names; a 400 naming `cursor` when it is not one of this listing's. */
export function decodeCursor(cursor: string, digest: string): Position {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw badCursor('not a cursor this API returned');
  }
  const { k, t, q } = (body ?? {}) as Partial<CursorBody>;
  if ((typeof k !== 'number' && k !== null) || typeof t !== 'string' || typeof q !== 'string') {
    throw badCursor('not a cursor this API returned');
  }
  if (q !== digest) {
    throw badCursor('the cursor belongs to a listing with other filters or sort; start again');
  }
  return { key: k, tie: t };
}
