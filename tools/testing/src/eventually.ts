/**
 * Polls `check` until it returns a truthy value; past `timeoutMs` it throws, naming `what` and
 * adding `detail()` (e.g. a child process's output). Tests wait for conditions, never for times.
 */
export async function eventually<T>(
  check: () => Promise<T> | T,
  timeoutMs = 10_000,
  what = 'condition',
  options: { detail?: () => string; intervalMs?: number } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) {
      const detail = options.detail?.();
      throw new Error(`${what} not met within ${timeoutMs} ms${detail ? `\n${detail}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 25));
  }
}
