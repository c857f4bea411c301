// Start-up check shared by the control plane and workers: PING Redis once with a deadline, so a
// process whose Redis is unreachable fails fast with one clear line instead of retrying forever
// (their long-lived clients use maxRetriesPerRequest: null and would wait indefinitely).
import { createRedisClient, redactUrl } from './redis-url.ts';

/** How to get a Redis, appended to the one-line error. */
export const REDIS_HINT =
  'set REDIS_URL, or start one: apt-get install redis-server | brew install redis | docker compose up -d redis';

export const DEFAULT_REDIS_CHECK_TIMEOUT_MS = 5_000;

export class RedisUnreachableError extends Error {
  constructor(
    /** The URL with any password replaced by `***`. */
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach Redis at ${url}: ${reason}`);
    this.name = 'RedisUnreachableError';
  }
}

/** The URL without its password (safe to print). */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return redactUrl(url); // e.g. several sentinel hosts, which URL cannot parse
  }
}

function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0)
    return describeError(error.errors[0]);
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return error.message !== '' ? error.message : (code ?? error.name);
  }
  return String(error);
}

/**
 * Connects with no retries and PINGs; rejects with RedisUnreachableError when either fails or
 * `timeoutMs` passes first. Never leaves a client, timer or unhandled 'error' event behind.
 */
export async function checkRedisReachable(
  url: string,
  timeoutMs: number = DEFAULT_REDIS_CHECK_TIMEOUT_MS,
): Promise<void> {
  const client = createRedisClient(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  let lastError: unknown;
  client.on('error', (error: unknown) => (lastError = error));
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no PING reply within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([client.connect().then(() => client.ping()), deadline]);
  } catch (error) {
    throw new RedisUnreachableError(redactRedisUrl(url), describeError(lastError ?? error));
  } finally {
    clearTimeout(timer);
    client.disconnect();
  }
}
