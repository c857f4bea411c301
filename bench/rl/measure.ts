// Timing and memory helpers for the bench: interleaved medians of wall time after warm-up, a
// full garbage collection before each timed run, and memory readings.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
/**
 * A full GC before every timed run, so no candidate pays for the garbage another left behind (the
 * baseline allocates hundreds of MiB per run). Each still pays for the collections its own
 * allocations trigger while it runs.
 */
const collectGarbage = runInNewContext('gc') as () => void;

/**
 * Median ms of each named run, measured round-robin so that every candidate sees the same machine
 * load (a shared machine's load drifts between runs). Each round runs `heavy` candidates once and
 * the others `perRound` times (cheap runs get more samples).
 */
export function interleavedMedians(
  runs: Record<string, () => unknown>,
  heavy: ReadonlySet<string>,
  rounds: number,
  perRound: number,
): Record<string, number> {
  const samples: Record<string, number[]> = {};
  for (const run of Object.values(runs)) run(); // warm-up: JIT and page faults
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of Object.entries(runs)) {
      const times = (samples[name] ??= []);
      for (let k = 0; k < (heavy.has(name) ? 1 : perRound); k++) {
        collectGarbage();
        const start = performance.now();
        run();
        times.push(performance.now() - start);
      }
    }
  }
  return Object.fromEntries(
    Object.entries(samples).map(([name, times]) => [
      name,
      times.sort((a, b) => a - b)[times.length >> 1]!,
    ]),
  );
}

/** Bytes/ms of one Float32Array.prototype.set over `ms` (read + write counted). */
export function copyRate(bytes: number, ms: number): number {
  return (2 * bytes) / ms;
}

export function peakRssMiB(): number {
  return process.resourceUsage().maxRSS / 1024; // maxRSS is in KiB
}

export function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(1);
}
