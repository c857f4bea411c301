// Optional Pushgateway push for short-lived workers (e.g. a batch job that exits after its run):
// PUT the worker's registry under job=anneal_worker, pool, worker every interval and on close.
import type { Logger, Registry } from '@anneal/telemetry';

export interface Pusher {
  push(): Promise<void>;
  /** Final push, then stop the timer. */
  close(): Promise<void>;
}

export function pushgatewayUrl(base: string, pool: string, workerId: string): string {
  const seg = (s: string) => encodeURIComponent(s);
  return `${base.replace(/\/+$/, '')}/metrics/job/anneal_worker/pool/${seg(pool)}/worker/${seg(workerId)}`;
}

export function startPushgateway(
  registry: Registry,
  options: { url: string; intervalSeconds: number; logger: Logger },
): Pusher {
  const push = async () => {
    try {
      const body = await registry.metrics();
      const res = await fetch(options.url, {
        method: 'PUT',
        headers: { 'content-type': registry.contentType },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
    } catch (error) {
      options.logger.warn({ err: String(error), url: options.url }, 'pushgateway push failed');
    }
  };
  const timer = setInterval(() => void push(), options.intervalSeconds * 1000);
  timer.unref();
  return {
    push,
    async close() {
      clearInterval(timer);
      await push();
    },
  };
}
