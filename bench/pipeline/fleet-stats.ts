// What the fake vLLM replicas of the engine host (engine-host.ts) saw, for bench/fleet-share:
// adapter names listed per run (a name starts with its run id, `<runId>-…`; a shared reference's
// with its reference id) sampled every 20 ms;
// names listed at once, completions, reads, evictions, stalls and refused unloads counted exactly
// by the fakes. `reset` starts a new round (peaks from what is listed now, counts from zero).
import type { FakeVllmServer } from '@anneal/engines/testing';
import type { FleetStats } from './stack.ts';

// A run's own adapters are `<runId>-…`; a shared reference's `<referenceId>@shared.<generation>`
// (its users: the run records' `adapterDemand[].reference`).
const runOf = (name: string) =>
  name.includes('@shared.')
    ? (name.split('@shared.')[0] as string)
    : (name.split('-')[0] as string);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

export function watchFleet(replicas: readonly FakeVllmServer[]): {
  stats(): FleetStats;
  reset(): void;
  close(): void;
} {
  let peakPerRun: Record<string, number> = {};
  const sampleNames = () => {
    for (const replica of replicas) {
      const counts: Record<string, number> = {};
      for (const name of replica.adapters.keys()) {
        counts[runOf(name)] = (counts[runOf(name)] ?? 0) + 1;
      }
      for (const [run, count] of Object.entries(counts)) {
        peakPerRun[run] = Math.max(peakPerRun[run] ?? 0, count);
      }
    }
  };
  const sampler = setInterval(sampleNames, 20);
  const totals = () => ({
    reads: sum(replicas.map((r) => r.lora.cache?.reads.length ?? 0)),
    evictions: sum(replicas.map((r) => r.lora.cache?.evicted.length ?? 0)),
    stalledMs: sum(replicas.map((r) => r.batch?.stalledMs ?? 0)),
  });
  let base = totals();
  let requestsSeen = replicas.map((r) => r.requests.length);

  return {
    stats() {
      sampleNames();
      const now = totals();
      return {
        peakListed: replicas.map((r) => r.lora.peakListed),
        listed: replicas.map((r) => [...r.adapters.keys()]),
        peakPerRun,
        served: replicas.flatMap((r) =>
          r.served.map((s): [string, number, number, number] => [
            runOf(s.requested),
            s.tokens,
            Math.round(performance.timeOrigin + s.atMs),
            Math.round(performance.timeOrigin + s.arrivedMs),
          ]),
        ),
        crossServed: sum(
          replicas.map((r) => r.served.filter((s) => s.requested !== s.servedBy).length),
        ),
        reads: now.reads - base.reads,
        evictions: now.evictions - base.evictions,
        stalledMs: now.stalledMs - base.stalledMs,
        failedUnloads: sum(
          replicas.map(
            (r, i) =>
              r.requests
                .slice(requestsSeen[i])
                .filter((q) => q.path === '/v1/unload_lora_adapter' && q.status === 500).length,
          ),
        ),
        peakBatch: Math.max(...replicas.map((r) => r.batch?.peakBatch ?? 0)),
      };
    },
    reset() {
      base = totals();
      requestsSeen = replicas.map((r) => r.requests.length);
      peakPerRun = {};
      for (const replica of replicas) {
        replica.served.splice(0);
        replica.lora.peakListed = replica.adapters.size;
        if (replica.batch) replica.batch.peakBatch = replica.batch.batch;
      }
    },
    close() {
      clearInterval(sampler);
    },
  };
}
